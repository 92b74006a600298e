package lazyre

import "testing"

func TestNewCompilesOnceOnFirstUse(t *testing.T) {
	re := New(`^a+b$`)
	first := re()
	if !first.MatchString("aab") || first.MatchString("ab c") {
		t.Fatalf("pattern %q matches wrongly", first)
	}
	if re() != first {
		t.Fatal("a second call compiled the pattern again")
	}
}

func TestNewPanicsOnUseNotBefore(t *testing.T) {
	re := New(`(`) // must not panic here
	defer func() {
		if recover() == nil {
			t.Fatal("an invalid pattern did not panic on first use")
		}
	}()
	re()
}
