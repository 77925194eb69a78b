package redisstore

import "testing"

// The expected slots are Redis's own (CLUSTER KEYSLOT); the cluster tests
// compare slotOf with a live cluster for the store's keys as well.
func TestSlotOf(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want int
	}{
		{"", 0},
		{"123456789", 12739}, // CRC-16/XMODEM check value 0x31C3
		{"foo", 12182},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"user1000", 3443},
		{"foo{}{bar}", 8363}, // an empty tag: the whole key
		{"foo{{bar}}zap", 4015},
		{"foo{bar}{zap}", 5061},
		{"{bar", 4015}, // no closing brace: the whole key
	} {
		if got := slotOf(tc.key); got != tc.want {
			t.Errorf("slotOf(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
}

func FuzzSlotOf(f *testing.F) {
	for _, s := range []string{"", "{", "}", "{}", "a{b}c", "{{}}", "sl:{9zvH0c4rDp1Rx2Vw}:tb1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		s := slotOf(key)
		if s < 0 || s >= hashSlots {
			t.Fatalf("slotOf(%q) = %d", key, s)
		}
		// A key with a non-empty tag lands where the tag alone does.
		tagged := "x{" + key + "}y"
		if key != "" && !containsBrace(key) && slotOf(tagged) != slotOf(key) {
			t.Fatalf("slotOf(%q) = %d, slotOf(%q) = %d", tagged, slotOf(tagged), key, s)
		}
	})
}

func containsBrace(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '{' || s[i] == '}' {
			return true
		}
	}
	return false
}
