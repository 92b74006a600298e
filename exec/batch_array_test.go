package exec

import "testing"

// submitTogether submits the attempts of submit (by item key) at once, as
// one scheduling pass starts them, and returns their job ids by key.
func submitTogether(t *testing.T, submit map[string]func() (string, error)) map[string]string {
	t.Helper()
	type res struct {
		key, id string
		err     error
	}
	out := make(chan res, len(submit))
	for key, f := range submit {
		go func() {
			id, err := f()
			out <- res{key, id, err}
		}()
	}
	ids := map[string]string{}
	for range submit {
		r := <-out
		if r.err != nil {
			t.Fatalf("%s: %v", r.key, r.err)
		}
		ids[r.key] = r.id
	}
	return ids
}
