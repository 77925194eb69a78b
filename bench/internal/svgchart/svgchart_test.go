package svgchart

import (
	"encoding/xml"
	"math"
	"strings"
	"testing"
)

func TestFigureIsWellFormedSVG(t *testing.T) {
	out := Figure("Redis <load> & latency", []Panel{
		{Title: "throughput", XLabel: "goroutines", YLabel: "checks/s", X: []float64{1, 16, 64},
			Series: []Series{{Name: "sluice", Y: []float64{5000, 40000, 42000}, Highlight: true},
				{Name: "peer", Y: []float64{4000, math.NaN(), 30000}}}},
		{Title: "ns/op", XLabel: "ns", Series: []Series{{Name: "sluice", Y: []float64{120}}, {Name: "peer", Y: []float64{300}}}},
	})
	d := xml.NewDecoder(strings.NewReader(string(out)))
	for {
		_, err := d.Token()
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("not well-formed: %v\n%s", err, out)
		}
	}
	for _, want := range []string{"<svg", "polyline", "sluice", "&lt;load&gt; &amp;", "<rect x"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("missing %q", want)
		}
	}
}

func TestNiceTicks(t *testing.T) {
	got := NiceTicks(43000, 5)
	if got[0] != 0 || got[len(got)-1] < 43000 || len(got) > 8 {
		t.Errorf("ticks %v", got)
	}
	if g := NiceTicks(0, 5); len(g) != 2 {
		t.Errorf("ticks for 0: %v", g)
	}
}
