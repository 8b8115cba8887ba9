package zkfake

import "testing"

// TestIPPatternAsZooKeeper: which ip ACL ids ZooKeeper 3.8.0 takes, as its
// create answered them (nil or InvalidACL) on a real ensemble.
func TestIPPatternAsZooKeeper(t *testing.T) {
	for id, valid := range map[string]bool{
		"127.0.0.1": true, "127.0.0.1/24": true, "1.2.3.4/32": true, "0.0.0.0/0": true,
		"010.0.0.1": true, "+1.2.3.4": true, "-0.1.2.3": true, "1.2.3.4/+8": true, "1.2.3.4/08": true, "1.2.3.4/-0": true,
		"\uff11.2.3.4": true, // a fullwidth 1
		"::1":          false, "127.0.0.1/33": false, "localhost": false, "": false, "127.1": false, "1.2.3.4.": false,
		"1.2.3.4/": false, "256.1.1.1": false, "1.2.3": false, "1.2.3.4.5": false, "1..2.3": false, "1.2.3.4/8/9": false,
		"0x1.2.3.4": false,
	} {
		if got := validIPPattern(id); got != valid {
			t.Errorf("validIPPattern(%q) = %v, want %v", id, got, valid)
		}
	}
}

func TestIPMatches(t *testing.T) {
	for _, tc := range []struct {
		pattern, addr string
		want          bool
	}{
		{"127.0.0.1", "127.0.0.1", true},
		{"127.0.0.0/8", "127.0.0.1", true},
		{"127.0.0.1/24", "127.0.0.9", true},
		{"10.0.0.0/8", "127.0.0.1", false},
		{"0.0.0.0/0", "127.0.0.1", true},
		{"0127.0.0.1", "127.0.0.1", true},
		{"127.0.0.2", "127.0.0.1", false},
		{"127.0.0.1/33", "127.0.0.1", false},
		{"\U0001d7d927.0.0.1", "127.0.0.1", true}, // a mathematical double-struck 1, in the second of five adjacent blocks
	} {
		if got := ipMatches(tc.pattern, tc.addr); got != tc.want {
			t.Errorf("ipMatches(%q, %q) = %v, want %v", tc.pattern, tc.addr, got, tc.want)
		}
	}
}
