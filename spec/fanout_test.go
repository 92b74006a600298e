package spec

import (
	"testing"
	"unicode/utf8"
)

// TestCleanKey: the fast check of an item's value agrees with keyChars
// on every character, so a value is kept as its key exactly when the
// regexp would leave it as it is.
func TestCleanKey(t *testing.T) {
	for c := rune(0); c < 0x300; c++ {
		v := "a" + string(c) + "b"
		if c >= utf8.RuneSelf && c < 0x100 {
			v = "a" + string([]byte{byte(c)}) + "b" // a lone byte, not UTF-8
		}
		if got, want := cleanKey(v), !keyChars.MatchString(v); got != want {
			t.Errorf("cleanKey(%q) = %v, keyChars says %v", v, got, want)
		}
	}
	if !cleanKey("") {
		t.Error(`cleanKey("") = false`)
	}
}
