package subst

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestZZTime(t *testing.T) {
	dir := os.Getenv("ZZ_DIR")
	if dir == "" {
		t.Skip()
	}
	ents, _ := os.ReadDir(dir)
	var worst time.Duration
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		line := strings.SplitN(string(b), "\n", 2)[1]
		line = strings.TrimSpace(line)
		line = strings.TrimSuffix(strings.TrimPrefix(line, "string("), ")")
		s, err := strconv.Unquote(line)
		if err != nil {
			continue
		}
		start := time.Now()
		Names(s)
		Words(s)
		vars := map[string]string{}
		for _, r := range Names(s) {
			vars[r.Name] = "x"
		}
		Argv(s, vars)
		Script(s, vars)
		d := time.Since(start)
		if d > worst {
			worst = d
			t.Logf("%v %q", d, s)
		}
	}
}
