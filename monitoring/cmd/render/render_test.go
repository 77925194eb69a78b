package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/redistest/redisstoretest"
)

// TestMain says, in one line, when the tests that need redis-server were
// skipped, and discards go-redis's own logging (SLUICE_REDIS_LOG=1 keeps
// it), so the output shows the tests.
func TestMain(m *testing.M) { os.Exit(redisstoretest.Quiet(redistest.ReportSkips(m)).Run()) }

// TestRender runs a short scenario and checks that every panel of the
// dashboard has data and that the picture is well-formed XML. The
// scenario runs 10 s in real time, so the test runs only with
// SLUICE_LONG=1 (.ci/test runs it so).
func TestRender(t *testing.T) {
	if os.Getenv("SLUICE_LONG") == "" {
		t.Skip("runs a 10 s scenario in real time: runs with SLUICE_LONG=1")
	}
	redistest.Binary(t) // skips without redis-server, fails under REQUIRE_REDIS=1
	out := filepath.Join(t.TempDir(), "dashboard.svg")
	var summary bytes.Buffer
	dash, err := render("../../grafana-dashboard.json", out, 10*time.Second, &summary)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + summary.String())
	if len(dash.Panels) == 0 {
		t.Fatal("the dashboard has no panels")
	}
	for _, p := range dash.Panels {
		points := 0
		for _, s := range p.Series {
			points += len(s.Points)
		}
		if points == 0 {
			t.Errorf("panel %q: no data", p.Title)
		}
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(raw))
	paths := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", out, err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "path" {
			paths++
		}
	}
	if paths == 0 {
		t.Error("the picture draws no series")
	}
	for _, p := range dash.Panels {
		if !strings.Contains(string(raw), esc(p.Title)) {
			t.Errorf("the picture lacks the panel %q", p.Title)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		v, top, step float64
		unit         string
		want         string
	}{
		{0.25, 1, 0.25, "percentunit", "25%"},
		{0.0125, 0.05, 0.0125, "percentunit", "1.25%"},
		{0.002, 0.1, 0.025, "s", "2 ms"},
		{0.0005, 0.001, 0.00025, "s", "0.50 ms"},
		{0.0005, 0.0008, 0.0002, "s", "500 µs"},
		{1.5, 2, 0.5, "s", "1.5 s"},
		{1500, 2000, 500, "reqps", "1.5k req/s"},
		{400, 600, 200, "ops", "400 ops/s"},
		{3, 4, 1, "short", "3"},
		{0.5, 2, 0.5, "short", "0.5"},
		{2.5e6, 5e6, 0.5e6, "short", "2.5M"},
	} {
		if got := format(c.v, c.unit, c.top, c.step); got != c.want {
			t.Errorf("format(%v, %q, %v, %v) = %q, want %q", c.v, c.unit, c.top, c.step, got, c.want)
		}
	}
}

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []float64
	}{
		{0, 1, []float64{0, 0.25, 0.5, 0.75, 1}},
		{0, 600, []float64{0, 200, 400, 600}},
		{0, 494, []float64{0, 200, 400, 600}},
		{-1, 1, []float64{-1, -0.5, 0, 0.5, 1}},
		{0, 0.088, []float64{0, 0.025, 0.05, 0.075, 0.1}},
	} {
		got := niceTicks(c.lo, c.hi, 4)
		if len(got) != len(c.want) {
			t.Errorf("niceTicks(%v, %v) = %v, want %v", c.lo, c.hi, got, c.want)
			continue
		}
		for i := range got {
			if d := got[i] - c.want[i]; d > 1e-9 || d < -1e-9 {
				t.Errorf("niceTicks(%v, %v) = %v, want %v", c.lo, c.hi, got, c.want)
				break
			}
		}
	}
}
