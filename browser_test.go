package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/rogpeppe/go-internal/testscript"
)

// browserPath is the headless browser the [browser] condition and the
// browser command use: $FABER_BROWSER, else the first of chromium,
// chromium-browser, google-chrome on PATH; "" when there is none.
func browserPath() string {
	if p := os.Getenv("FABER_BROWSER"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := osexec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browserCondition is [browser]: a headless Chromium is here. With
// FABER_BROWSER_REQUIRED=1 (CI sets it after installing Chromium) a missing
// one fails the script instead of skipping it, so that CI cannot pass
// without opening a report in a browser.
func browserCondition() (bool, error) {
	if browserPath() != "" {
		return true, nil
	}
	if os.Getenv("FABER_BROWSER_REQUIRED") == "1" {
		return false, fmt.Errorf("FABER_BROWSER_REQUIRED=1 but no chromium, chromium-browser or google-chrome is on PATH (set FABER_BROWSER)")
	}
	return false, nil
}

// pageCheck is what a browser saw while it loaded a page.
type pageCheck struct {
	mu       sync.Mutex
	requests []string // every URL the page asked for, the page itself included
	problems []string // console errors, uncaught exceptions, error log entries
	bars     int      // timeline bars of attempts: svg rect.bar.attempt
}

// openInBrowser loads file in a headless Chromium, lets it settle and
// reports what the page requested, what it complained about and what its
// timeline drew.
func openInBrowser(file string, timeout time.Duration) (*pageCheck, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	// Chromium writes its profile, caches and crash reports under HOME
	// (and XDG_*): a directory of its own, removed after, so that it never
	// creates a test's made-up HOME (testscript's /no-home), which other
	// scripts rely on not existing.
	home, err := os.MkdirTemp("", "faber-browser-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browserPath()),
		chromedp.UserDataDir(filepath.Join(home, "profile")),
		chromedp.Env("HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "XDG_DATA_HOME="+filepath.Join(home, ".local", "share")),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("no-first-run", true),
		chromedp.WindowSize(1366, 900))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root otherwise
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancelC := chromedp.NewContext(actx)
	defer cancelC()
	ctx, cancelT := context.WithTimeout(ctx, timeout)
	defer cancelT()

	pc := &pageCheck{}
	// Listen sees every event of the tab from its start (chromedp enables
	// the network, runtime and log domains when it attaches).
	err = chromedp.Listen(ctx, func(ev any) {
		pc.mu.Lock()
		defer pc.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			pc.requests = append(pc.requests, e.Request.URL)
		case *runtime.EventConsoleAPICalled:
			if e.Type == "error" || e.Type == "assert" {
				var args []string
				for _, a := range e.Args {
					args = append(args, strings.TrimSpace(string(a.Value)+" "+a.Description))
				}
				pc.problems = append(pc.problems, "console."+string(e.Type)+": "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			text := e.ExceptionDetails.Text
			if ex := e.ExceptionDetails.Exception; ex != nil {
				text += " " + ex.Description
			}
			pc.problems = append(pc.problems, "exception: "+text)
		case *log.EventEntryAdded:
			if e.Entry.Level == "error" {
				pc.problems = append(pc.problems, "log: "+e.Entry.Text+" "+e.Entry.URL)
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("chromium: %v", err)
	}
	page := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	err = chromedp.Do(ctx,
		chromedp.Navigate(page),
		chromedp.WaitReady("body"),
		// Let anything late (timers, lazy loads) show itself.
		chromedp.Sleep(300*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("chromium: %v", err)
	}
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('svg rect.bar.attempt').length`))
	if err != nil {
		return nil, fmt.Errorf("chromium: %v", err)
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.bars = bars
	return pc, nil
}

// cmdBrowser opens an HTML report in headless Chromium and checks that it
// loads with no console error, requests nothing but itself (no network, no
// other file) and draws one timeline bar per attempt of the report's JSON.
//
//	browser report.html report.json
func cmdBrowser(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: browser FILE.html REPORT.json")
	}
	var r struct {
		Steps []struct {
			ID       string            `json:"id"`
			Attempts []json.RawMessage `json:"attempts"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(ts.ReadFile(args[1])), &r); err != nil {
		ts.Fatalf("%s: %v", args[1], err)
	}
	want := 0
	for _, s := range r.Steps {
		want += len(s.Attempts)
	}
	pc, err := openInBrowser(ts.MkAbs(args[0]), 60*time.Second)
	ts.Check(err)
	self := (&url.URL{Scheme: "file", Path: filepath.ToSlash(ts.MkAbs(args[0]))}).String()
	for _, u := range pc.requests {
		if u != self && !strings.HasPrefix(u, "data:") {
			ts.Fatalf("the report requested %s: it must load nothing but itself", u)
		}
	}
	if len(pc.requests) == 0 {
		ts.Fatalf("the browser saw no request at all, not even the page (%s): the check cannot see requests", self)
	}
	if len(pc.problems) > 0 {
		ts.Fatalf("the report logged errors in the browser:\n%s", strings.Join(pc.problems, "\n"))
	}
	if pc.bars != want {
		ts.Fatalf("the timeline draws %d attempt bars; the report's JSON has %d attempts", pc.bars, want)
	}
	ts.Logf("browser: %d requests (the page), no errors, %d attempt bars", len(pc.requests), pc.bars)
}

// TestBrowserCheckSees proves the browser check can fail: a page that logs
// an error, throws, and asks for an image from elsewhere is caught on each
// count (the request goes to a closed local port: no network is reached).
func TestBrowserCheckSees(t *testing.T) {
	if ok, err := browserCondition(); err != nil {
		t.Fatal(err)
	} else if !ok {
		t.Skip("no headless Chromium here (CI installs one): the report's browser check is not exercised")
	}
	page := filepath.Join(t.TempDir(), "bad.html")
	html := `<!doctype html><html><body>
<svg><rect class="bar attempt" width="5" height="5"/><rect class="bar attempt ok" width="5" height="5"/><rect class="bar recovery" width="5" height="5"/></svg>
<img src="http://127.0.0.1:9/x.png">
<script>console.error("boom"); throw new Error("thrown")</script>
</body></html>`
	if err := os.WriteFile(page, []byte(html), 0o600); err != nil {
		t.Fatal(err)
	}
	pc, err := openInBrowser(page, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if pc.bars != 2 {
		t.Errorf("bars = %d, want 2 (rect.bar.attempt only)", pc.bars)
	}
	joined := strings.Join(pc.problems, "\n")
	for _, want := range []string{"boom", "thrown"} {
		if !strings.Contains(joined, want) {
			t.Errorf("problems do not mention %q:\n%s", want, joined)
		}
	}
	external := false
	for _, u := range pc.requests {
		external = external || strings.HasPrefix(u, "http://127.0.0.1:9/")
	}
	if !external {
		t.Errorf("requests %v: the image's request was not seen", pc.requests)
	}
}
