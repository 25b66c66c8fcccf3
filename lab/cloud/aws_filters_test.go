package cloud

import "testing"

// TestWildcardMatch: EC2's filter values, with and without wildcards; a
// value without any is compared whole (the fast path), one with them
// through the table.
func TestWildcardMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"i-0123", "i-0123", true},
		{"i-0123", "i-01234", false},
		{"i-0123", "I-0123", false},
		{"", "", true},
		{"", "x", false},
		{"i-*", "i-0123", true},
		{"i-*", "vol-1", false},
		{"*", "", true},
		{"i-012?", "i-0123", true},
		{"i-012?", "i-012", false},
		{`a\*b`, "a*b", true},
		{`a\*b`, "axb", false},
		{`a\?`, "a?", true},
		{"ccm*lab*", "ccm-my-lab-1", true},
	} {
		if got := wildcardMatch(tc.pattern, tc.s); got != tc.want {
			t.Errorf("wildcardMatch(%q, %q) = %t, want %t", tc.pattern, tc.s, got, tc.want)
		}
	}
}
