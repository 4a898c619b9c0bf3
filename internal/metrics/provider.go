package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	mexporter "github.com/GoogleCloudPlatform/opentelemetry-operations-go/exporter/metric"
	gcpdetector "go.opentelemetry.io/contrib/detectors/gcp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
)

// Exporters (BQCDC_METRICS_EXPORTER).
const (
	ExportNone   = "none"   // instruments are no-ops: nothing is measured
	ExportMemory = "memory" // kept in the process, read with Provider.Snapshot or Handler (the local stack's /metrics)
	ExportLog    = "log"    // one JSON log line of every series each Interval, and in memory as above
	ExportGCP    = "gcp"    // Cloud Monitoring of Project each Interval (needs roles/monitoring.metricWriter)
)

// Config chooses where measurements go.
type Config struct {
	Exporter string        // one of the Export* values; "" is ExportNone
	Interval time.Duration // between exports (log, gcp); 0 is 60 s
	Project  string        // Cloud Monitoring project (gcp)
	Service  string        // service.name of the resource ("bqcdc-ingest", ...)
	Log      *slog.Logger  // receives the log exporter's lines and export errors
}

// DefaultInterval between exports: Cloud Monitoring accepts a point per
// series at most every 5 s and bills by samples, and alerts look at minutes.
const DefaultInterval = 60 * time.Second

// Provider is a configured meter provider and the Recorder on it.
type Provider struct {
	rec    *Recorder
	mp     *sdkmetric.MeterProvider // nil for ExportNone
	manual *sdkmetric.ManualReader  // memory and log
}

// Start builds the provider of cfg. A gcp provider needs no network to
// start: the exporter connects on its first export.
func Start(ctx context.Context, cfg Config) (*Provider, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	var readers []sdkmetric.Option
	p := &Provider{}
	switch cfg.Exporter {
	case "", ExportNone:
		return p, nil // a nil Recorder: every call returns at once
	case ExportMemory:
		p.manual = sdkmetric.NewManualReader()
		readers = append(readers, sdkmetric.WithReader(p.manual))
	case ExportLog:
		p.manual = sdkmetric.NewManualReader()
		readers = append(readers, sdkmetric.WithReader(p.manual),
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(logExporter{log: cfg.Log}, sdkmetric.WithInterval(cfg.Interval))))
	case ExportGCP:
		if cfg.Project == "" {
			return nil, errors.New("exporting metrics to Cloud Monitoring needs a project")
		}
		// Terraform declares the descriptors (see Instruments): an alert
		// policy cannot name a metric type that does not exist yet, and one
		// owner of a descriptor cannot disagree with another.
		exp, err := mexporter.New(mexporter.WithProjectID(cfg.Project), mexporter.WithDisableCreateMetricDescriptors())
		if err != nil {
			return nil, fmt.Errorf("creating the Cloud Monitoring exporter: %w", err)
		}
		readers = append(readers, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(cfg.Interval))))
		// Cloud Run's instance id becomes the series' task_id, so two
		// instances never write the same series.
		res, err := resource.New(ctx, resource.WithDetectors(gcpdetector.NewDetector()),
			resource.WithAttributes(attribute.String("service.name", cfg.Service)))
		if err != nil {
			cfg.Log.Warn("metrics: the resource is partly detected", "event", "metrics_resource", "error", err.Error())
		}
		if res != nil {
			readers = append(readers, sdkmetric.WithResource(res))
		}
	default:
		return nil, fmt.Errorf("metrics exporter %q: want %s, %s, %s or %s", cfg.Exporter, ExportNone, ExportMemory, ExportLog, ExportGCP)
	}
	// Exemplars would need sampled spans; skipping them keeps a
	// measurement to an aggregation update.
	p.mp = sdkmetric.NewMeterProvider(append(readers, sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter))...)
	rec, err := New(p.mp)
	if err != nil {
		return nil, err
	}
	p.rec = rec
	return p, nil
}

// Recorder is the provider's recorder: nil (recording nothing) for
// ExportNone and for a nil provider.
func (p *Provider) Recorder() *Recorder {
	if p == nil {
		return nil
	}
	return p.rec
}

// Flush exports what is measured now (gcp, log): the compact function calls
// it at the end of a run, as its instance may get no CPU until the next one.
func (p *Provider) Flush(ctx context.Context) error {
	if p == nil || p.mp == nil {
		return nil
	}
	return p.mp.ForceFlush(ctx)
}

// Shutdown flushes and stops the provider.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.mp == nil {
		return nil
	}
	return p.mp.Shutdown(ctx)
}

// Snapshot reads every series now (memory and log exporters).
func (p *Provider) Snapshot(ctx context.Context) ([]Series, error) {
	if p == nil || p.manual == nil {
		return nil, errors.New("metrics are not kept in memory (BQCDC_METRICS_EXPORTER is not memory or log)")
	}
	var rm metricdata.ResourceMetrics
	if err := p.manual.Collect(ctx, &rm); err != nil {
		return nil, fmt.Errorf("collecting metrics: %w", err)
	}
	return Flatten(rm), nil
}

// Handler serves the snapshot as JSON: {"metrics": [series...]}.
func (p *Provider) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		series, err := p.Snapshot(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"metrics": series})
	})
}

// logExporter writes each export as one JSON log line.
type logExporter struct{ log *slog.Logger }

func (logExporter) Temporality(sdkmetric.InstrumentKind) metricdata.Temporality {
	return metricdata.CumulativeTemporality
}

func (logExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (e logExporter) Export(_ context.Context, rm *metricdata.ResourceMetrics) error {
	series := Flatten(*rm)
	if len(series) > 0 {
		e.log.Info("metrics", "event", "metrics", "metrics", series)
	}
	return nil
}

func (logExporter) ForceFlush(context.Context) error { return nil }
func (logExporter) Shutdown(context.Context) error   { return nil }
