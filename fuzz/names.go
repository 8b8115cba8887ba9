package fuzz

import "strings"

// This file is StableName: node names as stories and findings tell them,
// the same on every run of a case.

// StableName elides GUIDs from node names: a protected name's ("_c_<32
// hex>-" becomes "_c_…-") and a name that is a GUID and nothing else (as
// recipe.Semaphore names its leases, and kazoo its own: "<32 hex>" becomes
// "…"). A recipe may draw them at random (recipe.Mutex and recipe.Semaphore
// take them from crypto/rand), and the story and transcript of a case must
// be the same every time it runs; a protected name's sequence number still
// tells its nodes apart. A recipe's own checks pass the node names they
// report through it too, for the same reason.
//
// It scans by hand rather than with a regular expression: every listing a
// story tells passes through it, and a case whose queue grows to thousands
// of nodes spent most of its time here.
func StableName(s string) string {
	var b strings.Builder
	done := 0 // s[:done] is in b already
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], guidMark) && guidAt(s, i+len(guidMark), '-'):
			b.WriteString(s[done:i])
			b.WriteString(guidMark + "…-")
			i += len(guidMark) + guidDigits + 1
			done = i
		case (i == 0 || s[i-1] == '/') && guidAt(s, i, 0):
			b.WriteString(s[done:i])
			b.WriteString("…")
			i += guidDigits
			done = i
		default:
			i++
		}
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// guidDigits is how many hex digits a GUID has.
const guidDigits = 32

// guidAt reports whether s has a GUID at i followed by the byte after, or,
// if after is 0, by the end of s or a byte that cannot go on a name.
func guidAt(s string, i int, after byte) bool {
	end := i + guidDigits
	if end > len(s) || !isHex(s[i:end]) {
		return false
	}
	if after != 0 {
		return end < len(s) && s[end] == after
	}
	return end == len(s) || !isNameByte(s[end])
}

func isNameByte(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '-' || c == '.'
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// guidMark begins a protected node name, before its GUID.
const guidMark = "_c_"
