package headers_test

import (
	"encoding/json"
	"testing"

	"github.com/sluicehq/sluice/headers"
)

func TestModeString(t *testing.T) {
	for _, tc := range []struct {
		m    headers.Mode
		want string
	}{
		{headers.None, "none"},
		{headers.IETF, "ietf"},
		{headers.Default, "ietf"},
		{headers.Draft06, "draft06"},
		{headers.XRateLimit, "x-ratelimit"},
		{headers.IETF | headers.XRateLimit, "ietf|x-ratelimit"},
		{headers.IETF | headers.Draft06 | headers.XRateLimit, "ietf|draft06|x-ratelimit"},
		{headers.Draft06 | 0x40, "draft06|0x40"},
		{0x80, "0x80"},
	} {
		if got := tc.m.String(); got != tc.want {
			t.Errorf("Mode(%#x).String() = %q, want %q", uint8(tc.m), got, tc.want)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want headers.Mode
	}{
		{"ietf", headers.IETF},
		{"IETF", headers.IETF},
		{"default", headers.Default},
		{"draft06", headers.Draft06},
		{"Draft-06", headers.Draft06},
		{"x-ratelimit", headers.XRateLimit},
		{"XRateLimit", headers.XRateLimit},
		{"none", headers.None},
		{" none ", headers.None},
		{"ietf,x-ratelimit", headers.IETF | headers.XRateLimit},
		{"ietf | draft-06 | xratelimit", headers.IETF | headers.Draft06 | headers.XRateLimit},
		{"draft06, ietf", headers.IETF | headers.Draft06},
		{"ietf|ietf", headers.IETF},
		{"none,ietf", headers.IETF},
	} {
		got, err := headers.ParseMode(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseMode(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", " ", "ietf,", ",ietf", "ietf||none", "draft07", "x-ratelimit-reset", "0x8", "ietf;draft06"} {
		if got, err := headers.ParseMode(in); err == nil {
			t.Errorf("ParseMode(%q) = %v, want an error", in, got)
		}
	}
}

func TestModeRoundTrip(t *testing.T) {
	for m := headers.Mode(0); m <= headers.IETF|headers.Draft06|headers.XRateLimit; m++ {
		got, err := headers.ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v; want %v", m.String(), got, err, m)
		}
	}
}

func TestModeText(t *testing.T) {
	var cfg struct{ Mode headers.Mode }
	if err := json.Unmarshal([]byte(`{"Mode":"ietf, draft-06"}`), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Mode != headers.IETF|headers.Draft06 {
		t.Errorf("Mode = %v", cfg.Mode)
	}
	b, err := json.Marshal(cfg)
	if err != nil || string(b) != `{"Mode":"ietf|draft06"}` {
		t.Errorf("Marshal = %s, %v", b, err)
	}
	if err := json.Unmarshal([]byte(`{"Mode":"sometimes"}`), &cfg); err == nil {
		t.Error("unknown mode accepted")
	}
	if _, err := headers.Mode(0x10).MarshalText(); err == nil {
		t.Error("MarshalText accepted unknown bits")
	}
}
