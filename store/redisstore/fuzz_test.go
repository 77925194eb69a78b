package redisstore

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// The fuzz targets below feed every decoder of a Redis reply any input:
// each must return an error or a value, never panic. Their seed corpora
// run in the normal go test.

// replyOf reads a reply from fuzz input, in the shapes go-redis hands the
// store (int64, string, nil, []any), arrays nested at most three deep. A
// tag byte says which: 0 an int64 (8 bytes, little-endian), 1 a string
// (a length byte, then its bytes), 2 an array (a count byte, then its
// elements), 3 nil. Input that runs out reads as nil.
func replyOf(data []byte) any {
	v, _ := readReply(data, 0)
	return v
}

func readReply(b []byte, depth int) (any, []byte) {
	if len(b) == 0 {
		return nil, b
	}
	tag, b := b[0], b[1:]
	switch tag % 4 {
	case 0:
		var buf [8]byte
		n := copy(buf[:], b)
		return int64(binary.LittleEndian.Uint64(buf[:])), b[n:]
	case 1:
		if len(b) == 0 {
			return "", b
		}
		n := min(int(b[0]), len(b)-1)
		return string(b[1 : 1+n]), b[1+n:]
	case 2:
		if len(b) == 0 || depth >= 3 {
			return []any{}, b
		}
		n := int(b[0])
		b = b[1:]
		arr := make([]any, 0, n)
		for range n {
			var v any
			v, b = readReply(b, depth+1)
			arr = append(arr, v)
		}
		return arr, b
	}
	return nil, b
}

// encodeReply is the inverse of replyOf, for seeds.
func encodeReply(v any) []byte {
	switch v := v.(type) {
	case int64:
		return binary.LittleEndian.AppendUint64([]byte{0}, uint64(v))
	case string:
		return append([]byte{1, byte(len(v))}, v...)
	case []any:
		b := []byte{2, byte(len(v))}
		for _, e := range v {
			b = append(b, encodeReply(e)...)
		}
		return b
	}
	return []byte{3}
}

func ints(vs ...int64) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// fuzzRequests builds requests from shape: one to four hits in one or two
// requests, each of any algorithm, forced, partial or plain; with shape's
// top bit set, every hit carries a penalty.
func fuzzRequests(s *decider, shape uint64) []*request {
	var block time.Duration
	if shape>>63 == 1 {
		block = time.Minute
	}
	n := 1 + int(shape%4)
	shape /= 4
	hits := make([]sluice.Hit, n)
	for i := range hits {
		h := sluice.Hit{Key: string(rune('a' + i)), Limit: sluice.PerSecond(10), Algorithm: sluice.Algorithm(shape % 4), Cost: 1 + int64(shape/4%5)}
		switch shape / 32 % 3 {
		case 1:
			h.Force = true
		case 2:
			h.MinCost = 1
		}
		shape /= 96
		h.Block = block
		hits[i] = h
	}
	out := make([]sluice.Result, n)
	split := 0
	if n > 1 && shape%2 == 1 {
		split = 1 + int(shape/2)%(n-1)
	}
	var reqs []*request
	for _, part := range [][2]int{{0, split}, {split, n}} {
		if part[0] < part[1] {
			r := s.newRequest(hits[part[0]:part[1]], out[part[0]:part[1]])
			reqs = append(reqs, &r)
		}
	}
	return reqs
}

func FuzzDecodeTake(f *testing.F) {
	f.Add(encodeReply(ints(0, 1+4*2, 8, 200_000, 0, 12345)), uint64(4))
	f.Add(encodeReply(ints(1, 1, 1+4, 9, 100_000, 0, 77)), uint64(0))
	f.Add(encodeReply(ints(0, 2, 10, 0, 0, 99, 7)), uint64(3+4*(3+4*32)))
	f.Add(encodeReply(ints(0, 1+4, 9, 1, 0, 5, 0, 4, 0, 0, 0, 0)), uint64(1+2*96*4*0+96*4*2))
	f.Add(encodeReply(append(ints(0), "x", int64(1))), uint64(0))
	f.Add(encodeReply(int64(3)), uint64(0))
	f.Add([]byte{}, uint64(7))
	f.Add(encodeReply(ints(0, 3, 0, 900_000_000, 900_000_000, 1)), uint64(1)<<63) // blocked: the block started
	f.Add(encodeReply(ints(0, 3, 0, 900_000_000, 900_000_000, 0)), uint64(0))     // blocked, without a penalty
	f.Fuzz(func(t *testing.T, data []byte, shape uint64) {
		s := decodeStore()
		reqs := fuzzRequests(s, shape)
		err := s.finish(replyOf(data), reqs)
		if err != nil {
			var se *sluice.StoreError
			if !errors.As(err, &se) || !se.Ambiguous {
				t.Fatalf("error %v, want an ambiguous StoreError", err)
			}
			return
		}
		for _, r := range reqs {
			for i, res := range r.out {
				h := &r.hits[i]
				if res.Receipt.Taken < 0 || res.Receipt.Taken > h.Units() || h.Force && res.Receipt.Taken != 0 ||
					res.Remaining < 0 || res.ResetAfter < 0 || res.RetryAfter < 0 || res.Limit != h.Limit ||
					res.Blocked && (h.Block <= 0 || res.Allowed || res.Unsatisfiable) || res.BlockStarted && !res.Blocked {
					t.Fatalf("hit %+v decoded as %+v", *h, res)
				}
			}
		}
	})
}

func FuzzDecodeRefund(f *testing.F) {
	f.Add(encodeReply(int64(1)), 1)
	f.Add(encodeReply(int64(-1)), 1)
	f.Add(encodeReply("1"), 1)
	f.Add(encodeReply(ints(1)), 1)
	f.Fuzz(func(t *testing.T, data []byte, n int) {
		reply := replyOf(data)
		err := decodeRefund(reply, n)
		if v, ok := reply.(int64); ok && v >= 0 && v <= int64(n) {
			if err != nil {
				t.Fatalf("reply %d for %d refunds: %v", v, n, err)
			}
		} else if err == nil {
			t.Fatalf("reply %#v for %d refunds accepted", reply, n)
		}
	})
}

// FuzzClassifyReply feeds Redis error replies, plain and as Redis 6
// wraps a script's: each is classified as one of the store's kinds.
func FuzzClassifyReply(f *testing.F) {
	for _, msg := range []string{
		"WRONGTYPE Operation against a key holding the wrong kind of value",
		"ERR Error running script (call to f_4e6d): @user_script:63: WRONGTYPE Operation against a key",
		"ERR Error running script (call to f_4e6d): @user_script:",
		"ERR Error running script (call to f_4e6d): @user_script:9: ",
		"NOSCRIPT No matching script. Please use EVAL.",
		"CLUSTERDOWN The cluster is down", "MOVED 3999 127.0.0.1:6381", "", " ",
	} {
		f.Add(msg)
	}
	kinds := []error{sluice.ErrCorruptState, sluice.ErrScriptMissing, sluice.ErrClusterDown, sluice.ErrUnavailable}
	f.Fuzz(func(t *testing.T, msg string) {
		got := classifyReply(msg)
		for _, k := range kinds {
			if errors.Is(got, k) {
				return
			}
		}
		t.Fatalf("classifyReply(%q) = %v, not one of the store's kinds", msg, got)
	})
}

// TestReplyOfReadsWhatEncodeReplyWrote keeps the fuzz targets' seeds
// meaning what they say.
func TestReplyOfReadsWhatEncodeReplyWrote(t *testing.T) {
	for _, v := range []any{int64(-5), "abc", nil, ints(1, 2), []any{ints(3), "x", nil}} {
		got := replyOf(encodeReply(v))
		if g, w := encodeReply(got), encodeReply(v); string(g) != string(w) {
			t.Errorf("%#v read back as %#v", v, got)
		}
	}
}
