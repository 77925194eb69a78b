package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
)

// dashboard is the part of a Grafana dashboard the picture needs.
type dashboard struct {
	Title  string  `json:"title"`
	Panels []panel `json:"panels"`
}

type panel struct {
	Title   string `json:"title"`
	GridPos struct {
		X, Y, W, H int
	} `json:"gridPos"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`

	Series []series `json:"-"` // filled by evaluate
}

// series is one line of a panel.
type series struct {
	Name   string
	Points []point
}

type point struct {
	T time.Time
	V float64
}

func readDashboard(path string) (*dashboard, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &d, nil
}

// grafanaVars stands in for the dashboard's variables as Grafana would
// fill them for a one-second scrape interval and every job.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5s", "$__interval", "1s", "$job", ".*")

var legendVar = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)

// evaluate runs every panel's queries over [start, end] at step, as
// Grafana's range queries do, and keeps the results in the panels.
func evaluate(d *dashboard, q storage.Queryable, start, end time.Time, step time.Duration) error {
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	for i := range d.Panels {
		p := &d.Panels[i]
		p.Series = nil
		for _, t := range p.Targets {
			qry, err := eng.NewRangeQuery(context.Background(), q, nil, grafanaVars.Replace(t.Expr), start, end, step)
			if err != nil {
				return fmt.Errorf("panel %q: %w", p.Title, err)
			}
			res := qry.Exec(context.Background())
			if res.Err != nil {
				qry.Close()
				return fmt.Errorf("panel %q: %w", p.Title, res.Err)
			}
			m, err := res.Matrix()
			if err != nil {
				qry.Close()
				return fmt.Errorf("panel %q: %w", p.Title, err)
			}
			for _, s := range m {
				name := legendVar.ReplaceAllStringFunc(t.LegendFormat, func(v string) string {
					return s.Metric.Get(legendVar.FindStringSubmatch(v)[1])
				})
				if name == "" {
					name = s.Metric.String()
				}
				var pts []point
				for _, f := range s.Floats {
					if finite(f.F) {
						pts = append(pts, point{time.UnixMilli(f.T), f.F})
					}
				}
				if len(pts) > 0 {
					p.Series = append(p.Series, series{name, pts})
				}
			}
			qry.Close()
		}
	}
	return nil
}
