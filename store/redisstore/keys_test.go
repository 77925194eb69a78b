package redisstore

import (
	"regexp"
	"testing"

	"github.com/sluicehq/sluice"
)

var keyShape = regexp.MustCompile(`^sl:\{[A-Za-z0-9_-]{16}\}:tb1$`)

func FuzzKey(f *testing.F) {
	f.Add("per-ip\x00ip\x00203.0.113.7", "per-ip\x00ip\x00203.0.113.8")
	f.Add("{tag}", "}{")
	f.Add("\r\n\x00\xff", "")
	k := newKeyer(defaultPrefix, []byte("fuzz"))
	f.Fuzz(func(t *testing.T, a, b string) {
		ka := k.key(&sluice.Hit{Key: a})
		kb := k.key(&sluice.Hit{Key: b})
		if !keyShape.MatchString(ka) || !keyShape.MatchString(kb) {
			t.Fatalf("keys %q, %q do not have the fixed shape", ka, kb)
		}
		if (ka == kb) != (a == b) {
			t.Fatalf("key(%q) = %q, key(%q) = %q", a, ka, b, kb)
		}
	})
}

func TestKeyDependsOnSecretAndAlgorithmTag(t *testing.T) {
	h := sluice.Hit{Key: "per-ip\x00ip\x00203.0.113.7"}
	a := newKeyer("sl:", []byte("one")).key(&h)
	b := newKeyer("sl:", []byte("two")).key(&h)
	if a == b {
		t.Fatal("the secret does not change the key")
	}
	if got := newKeyer("app1:", []byte("one")).key(&h); got[:6] != "app1:{" {
		t.Fatalf("prefix not applied: %q", got)
	}
}
