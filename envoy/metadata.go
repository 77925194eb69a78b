package envoy

import (
	"slices"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/sluicehq/sluice/decide"
)

// WithDynamicMetadata makes every response carry dynamic metadata
// (RateLimitResponse.dynamic_metadata, which Envoy's filter stores under
// envoy.filters.http.ratelimit), as envoyproxy/ratelimit's responses do with
// RESPONSE_DYNAMIC_METADATA=true:
//
//	domain: the request's domain
//	descriptors: one per request descriptor: entries ("key=value" each),
//	             limit (its limit override, in protobuf text form) and
//	             hitsAddend, when it has them
//	hitsAddend:  the request's hits_addend, when not 0
//	metadata:    the metadata fields of the mapping's descriptors whose
//	             limits the request met and passed (status OK), merged in
//	             the request's order: the first value of a field wins, and
//	             mappings merge field by field
//
// A descriptor's metadata is returned only through its rate_limit, as
// envoyproxy/ratelimit does: not for a descriptor without one, an
// unlimited one, one a limit replaces, or one whose limit the request
// overrides. Default: no dynamic metadata.
func WithDynamicMetadata() Option {
	return decide.Setting(func(c *config) error {
		c.dynamicMetadata = true
		return nil
	})
}

// addMetadata sets the dynamic metadata of a response of dom, when the
// service returns it (WithDynamicMetadata). dom is nil for a domain the
// mapping does not define.
func (s *Service) addMetadata(req *rlsv3.RateLimitRequest, dom *domain, resp *rlsv3.RateLimitResponse) {
	if !s.cfg.dynamicMetadata || resp == nil {
		return
	}
	fields := map[string]*structpb.Value{"domain": structpb.NewStringValue(req.Domain)}
	descs := make([]*structpb.Value, 0, len(req.Descriptors))
	for _, desc := range req.Descriptors {
		f := make(map[string]*structpb.Value, 3)
		entries := make([]*structpb.Value, len(desc.Entries))
		for i, e := range desc.Entries {
			entries[i] = structpb.NewStringValue(e.Key + "=" + e.Value)
		}
		f["entries"] = structpb.NewListValue(&structpb.ListValue{Values: entries})
		if desc.Limit != nil {
			f["limit"] = structpb.NewStringValue(desc.Limit.String())
		}
		if h := desc.HitsAddend; h != nil {
			f["hitsAddend"] = structpb.NewNumberValue(float64(h.Value))
		}
		descs = append(descs, structpb.NewStructValue(&structpb.Struct{Fields: f}))
	}
	fields["descriptors"] = structpb.NewListValue(&structpb.ListValue{Values: descs})
	if req.HitsAddend != 0 {
		fields["hitsAddend"] = structpb.NewNumberValue(float64(req.HitsAddend))
	}
	if md := passedMetadata(req, dom, resp); md != nil {
		fields["metadata"] = structpb.NewStructValue(md)
	}
	resp.DynamicMetadata = &structpb.Struct{Fields: fields}
}

// passedMetadata merges the metadata of the limits the request's
// descriptors met and passed, or returns nil for none.
func passedMetadata(req *rlsv3.RateLimitRequest, dom *domain, resp *rlsv3.RateLimitResponse) *structpb.Struct {
	if dom == nil {
		return nil
	}
	lims := make([]*limit, len(req.Descriptors))
	var replaced []string
	for i, desc := range req.Descriptors {
		ents := make([]entry, len(desc.Entries))
		for j, e := range desc.Entries {
			ents[j] = entry{e.Key, e.Value}
		}
		if lims[i], _ = dom.match(ents); lims[i] != nil {
			replaced = append(replaced, lims[i].replaces...)
		}
	}
	var out *structpb.Struct
	for i, lim := range lims {
		switch {
		case lim == nil || lim.metadata == nil || lim.unlimited || req.Descriptors[i].Limit != nil,
			slices.Contains(replaced, lim.name),
			i >= len(resp.Statuses) || resp.Statuses[i].Code != rlsv3.RateLimitResponse_OK:
			continue
		}
		if out == nil {
			out = &structpb.Struct{Fields: make(map[string]*structpb.Value)}
		}
		mergeMetadata(out, lim.metadata)
	}
	return out
}

// mergeMetadata adds src's fields to dst: a field dst lacks is copied, a
// mapping dst has too is merged field by field, any other is kept as dst
// has it.
func mergeMetadata(dst, src *structpb.Struct) {
	for k, v := range src.Fields {
		cur, ok := dst.Fields[k]
		switch {
		case !ok:
			dst.Fields[k] = proto.Clone(v).(*structpb.Value) // the mapping's own stays unchanged
		case cur.GetStructValue() != nil && v.GetStructValue() != nil:
			mergeMetadata(cur.GetStructValue(), v.GetStructValue())
		}
	}
}
