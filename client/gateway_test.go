//go:build unix

package client_test

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/client"
)

// startGateway builds the demo gateway into bin (once per test) and
// starts it on a free loopback port with the in-memory store. It returns
// the gateway's base URL; the gateway is stopped by its pid when the
// test ends.
func startGateway(t *testing.T, bin string) string {
	t.Helper()
	if _, err := os.Stat(bin); err != nil {
		goBin, err := exec.LookPath("go")
		if err != nil {
			t.Fatalf("the go command, to build the gateway: %v", err)
		}
		if out, err := exec.Command(goBin, "build", "-o", bin, "github.com/sluicehq/sluice/examples/gateway").CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(pid, syscall.SIGKILL)
			<-done
		}
	})
	addr := make(chan string, 1)
	go func() {
		listening := regexp.MustCompile(`gateway listening.* addr=(\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case a := <-addr:
		return "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatal("the gateway did not say where it listens")
		return ""
	}
}

// counting counts the 429s the server sends, before the transport sees
// them.
type counting struct {
	base    http.RoundTripper
	refused atomic.Int64
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		c.refused.Add(1)
	}
	return resp, err
}

// TestPacingAgainstTheGateway runs 60 requests in a row through the
// transport against the demo gateway binary (50 a minute per client IP):
// none is refused to the caller, and with pacing they take at most 1.1
// times the ideal (50 at once, then 10 at 1.2 s each: 12 s). It takes
// about 25 s of wall time (the paced run, then one without pacing for
// comparison), so it runs only with SLUICE_LONG=1.
func TestPacingAgainstTheGateway(t *testing.T) {
	if os.Getenv("SLUICE_LONG") != "1" {
		t.Skip("runs the demo gateway for about 25 s; set SLUICE_LONG=1 to run it")
	}
	const n = 60
	const ideal = (n - 50) * 1200 * time.Millisecond
	bin := filepath.Join(t.TempDir(), "gateway")
	run := func(t *testing.T, opts ...client.Option) (time.Duration, int64) {
		url := startGateway(t, bin)
		base := &counting{base: &http.Transport{}}
		tr, err := client.New(base, opts...)
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Transport: tr}
		start := time.Now()
		for i := range n {
			resp, err := hc.Get(url + "/")
			if err != nil {
				t.Fatalf("request %d: %v", i+1, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("request %d: status %d reached the caller", i+1, resp.StatusCode)
			}
		}
		return time.Since(start), base.refused.Load()
	}
	t.Run("paced", func(t *testing.T) {
		paced, refused := run(t)
		t.Logf("paced: %d requests in %v (ideal %v, %.2f×), %d refusals from the server", n, paced.Round(time.Millisecond), ideal, paced.Seconds()/ideal.Seconds(), refused)
		if limit := ideal * 11 / 10; paced > limit {
			t.Fatalf("%d requests took %v, beyond 1.1 × the ideal %v", n, paced, ideal)
		}
	})
	t.Run("without pacing", func(t *testing.T) {
		unpaced, refused := run(t, client.WithoutPacing())
		t.Logf("without pacing: %d requests in %v (ideal %v, %.2f×), %d refusals from the server", n, unpaced.Round(time.Millisecond), ideal, unpaced.Seconds()/ideal.Seconds(), refused)
	})
}
