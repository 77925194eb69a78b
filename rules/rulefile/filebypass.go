package rulefile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/sluicehq/sluice/internal/ident"
	"github.com/sluicehq/sluice/internal/yamlkit"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"go.yaml.in/yaml/v3"
)

var bypassFields = []string{"name", "cidrs", "api_keys", "users", "limit", "algorithm", "on_fail", "enabled"}

// bypassList decodes the bypass section and returns the enabled entries.
func (d *decoder) bypassList(n *yaml.Node, defs fileDefaults, names map[string]int) ([]rules.Bypass, error) {
	seq, err := d.Sequence(n, "bypass", "a list of entries")
	if err != nil {
		return nil, err
	}
	var out []rules.Bypass
	for i, item := range seq.Content {
		b, on, err := d.bypassEntry(item, i, defs, names)
		if err != nil {
			return nil, err
		}
		if on {
			out = append(out, b)
		}
	}
	d.leave()
	return out, nil
}

// fileBypass is what a bypass entry of a file identifies requests by.
type fileBypass struct {
	prefixes []netip.Prefix
	keys     map[[sha256.Size]byte]bool
	users    map[string]bool
	env      *env
}

// bypassEntry decodes the i-th (0-based) entry of the bypass section.
func (d *decoder) bypassEntry(n *yaml.Node, i int, defs fileDefaults, names map[string]int) (rules.Bypass, bool, error) {
	d.enter("bypass", i+1, peekName(n))
	f, err := d.Mapping(n, "", bypassFields...)
	if err != nil {
		return rules.Bypass{}, false, err
	}
	n = yamlkit.Deref(n)
	b := rules.Bypass{OnFail: defs.onFail}
	if b.Name, err = d.entryName(n, f, names); err != nil {
		return rules.Bypass{}, false, err
	}
	d.name = b.Name
	fb := &fileBypass{env: d.env}
	if err := d.identities(n, f, fb); err != nil {
		return rules.Bypass{}, false, err
	}
	b.Identify = fb.identify
	if b.Algorithm, err = d.entryAlgorithm(f, defs.algorithm); err != nil {
		return rules.Bypass{}, false, err
	}
	lim, err := d.limit(n, f["limit"], b.Algorithm)
	if err != nil {
		return rules.Bypass{}, false, err
	}
	b.Limit = lim.Limit
	if b.OnFail, err = d.onFail(f["on_fail"], "on_fail", b.OnFail); err != nil {
		return rules.Bypass{}, false, err
	}
	enabled, err := d.optBool(f["enabled"], "enabled", true)
	return b, enabled, err
}

// identities reads the cidrs, api_keys and users of a bypass entry.
func (d *decoder) identities(n *yaml.Node, f map[string]*yaml.Node, fb *fileBypass) error {
	if v, ok := f["cidrs"]; ok {
		list, err := d.Strings(v, "cidrs", false, checkPrefix)
		if err != nil {
			return err
		}
		for _, s := range list {
			fb.prefixes = append(fb.prefixes, netip.MustParsePrefix(s))
		}
	}
	if v, ok := f["api_keys"]; ok {
		list, err := d.Strings(v, "api_keys", false, checkKeyHash)
		if err != nil {
			return err
		}
		fb.keys = make(map[[sha256.Size]byte]bool, len(list))
		for _, s := range list {
			var sum [sha256.Size]byte
			hex.Decode(sum[:], []byte(s)) // checked by checkKeyHash
			fb.keys[sum] = true
		}
	}
	if v, ok := f["users"]; ok {
		if d.env.user.IsZero() {
			return d.Failf(yamlkit.Deref(v), "users", "needs the signed-in user: set LoadConfig.User")
		}
		list, err := d.Strings(v, "users", false, checkUser)
		if err != nil {
			return err
		}
		fb.users = set(list)
	}
	if len(fb.prefixes) == 0 && len(fb.keys) == 0 && len(fb.users) == 0 {
		return d.Failf(n, "", "lists no cidrs, api_keys or users: it would exempt nothing")
	}
	return nil
}

// checkPrefix accepts a CIDR prefix or an address, normalised as
// keyfunc normalises client addresses (IPv4-mapped IPv6 becomes IPv4).
func checkPrefix(s string) (string, error) {
	ps, err := keyfunc.ParsePrefixes(s)
	if err != nil || strings.TrimSpace(s) != s {
		return "", fmt.Errorf("%s is not a CIDR prefix or IP address", yamlkit.Quote(s))
	}
	return ident.NormalizePrefix(ps[0]).String(), nil
}

// checkKeyHash accepts "sha256:" and 64 hex digits, returned without the
// prefix, in lower case. Its error never repeats the value: it may be a
// key pasted in clear.
func checkKeyHash(s string) (string, error) {
	h, ok := strings.CutPrefix(s, apiKeyHashPrefix)
	if _, err := hex.DecodeString(h); !ok || err != nil || len(h) != 2*sha256.Size {
		return "", errors.New(`not "sha256:" and 64 hex digits (see rulefile.HashAPIKey; keys are never written in clear); the value is not shown`)
	}
	if h = strings.ToLower(h); h == emptyKeyHash {
		return "", errors.New("the SHA-256 of an empty key: it would exempt requests that send an empty key")
	}
	return h, nil
}

// emptyKeyHash is the SHA-256 of "", in hex.
const emptyKeyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

func checkUser(s string) (string, error) {
	if s == "" {
		return "", errors.New("empty user id")
	}
	return s, nil
}

// identify is the entry's Bypass.Identify: an API key first, then the
// user, then the client address. The identity carries its kind, so that
// the entry's buckets for different kinds never meet.
func (fb *fileBypass) identify(r *http.Request) (string, bool) {
	if len(fb.keys) > 0 {
		if v := r.Header.Values(fb.env.apiHeader); len(v) == 1 {
			sum := sha256.Sum256([]byte(strings.Trim(v[0], " \t")))
			if fb.keys[sum] {
				return "api_key:" + hex.EncodeToString(sum[:]), true
			}
		}
	}
	if len(fb.users) > 0 {
		if id, ok := fb.env.cfg.User(r.Context()); ok && fb.users[id] {
			return "user:" + id, true
		}
	}
	if len(fb.prefixes) > 0 {
		resolve := fb.env.cfg.ClientIP
		if resolve == nil {
			resolve = keyfunc.RemoteAddr
		}
		if a, err := resolve(r); err == nil && a.IsValid() {
			a = ident.Normalize(a)
			for _, p := range fb.prefixes {
				if p.Contains(a) {
					return "ip:" + ident.IPKey(a, fb.env.ipv6Prefix), true
				}
			}
		}
	}
	return "", false
}
