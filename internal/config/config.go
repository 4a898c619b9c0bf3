// Package config reads the functions' configuration from environment
// variables (set by Terraform in production and by `bqcdc local` locally).
// Errors name the variable. Secrets are held here but never logged: use
// Redacted for anything printed (it masks a password in the registry URL
// too, https://user:secret@host, with package redact).
package config

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/proof"
	"github.com/bqcdc/bqcdc/internal/redact"
)

// Config is the runtime configuration of the ingest and compact functions.
type Config struct {
	BigQuery clients.Config
	Dataset  string

	RegistryURL      string
	RegistryUsername string
	RegistryPassword string

	// VisibilityLag bounds how long after _cdc_ingested_at a changelog row
	// can become visible (ingest function timeout plus clock skew); the
	// compaction watermark trails the clock by it.
	VisibilityLag          time.Duration
	ChangelogRetentionDays int // 0 keeps changelog partitions forever
	TombstoneRetentionDays int

	// SchemaEvolutionOff lists the source topics whose changelog keeps its
	// columns when a writer schema adds fields (ingest drops and counts
	// those values instead).
	SchemaEvolutionOff []string

	// CompactConcurrency bounds the flows one compaction run folds at once;
	// CompactBudget is how long a run may start flows (0: no limit).
	CompactConcurrency int
	CompactBudget      time.Duration
	// SnapshotSettle and MaintainEvery: compact.Options' (0: its
	// defaults; negative: off, never).
	SnapshotSettle time.Duration
	MaintainEvery  time.Duration
	// ChangeFeedEvery: materialize each flow's change feed this often (0:
	// every run).
	ChangeFeedEvery time.Duration

	// FlowsDir, when set, is a folder of flow files read instead of the
	// flows built into the functions.
	FlowsDir string
	// PubSubEndpoint is a Pub/Sub emulator's host:port (the standard
	// PUBSUB_EMULATOR_HOST); empty means Google's Pub/Sub.
	PubSubEndpoint string

	// ReplayKey signs (bqcdc replay) and verifies (ingest) the proof that a
	// message replays a dead letter (package proof). Empty: ingest
	// ignores replay ids and replay refuses to publish. A secret: never
	// printed (Redacted says only whether it is set).
	ReplayKey []byte
	// LogValues lets dead-letter reasons and log lines quote values of
	// the row (a refused timestamp's text, a row BigQuery rejected). Off
	// by default: they name the column and the kind of problem only, so
	// personal data stays in the tables whose access the operator controls.
	LogValues bool
	// AppendLedger (on by default): ingest covers each source in the
	// append ledger before appending its rows, and compaction tells the
	// sources with rows to fold from it (one query a run) instead of
	// reading every changelog's metadata. Off: neither does; both
	// functions must agree (Terraform sets both).
	AppendLedger bool
	// MetricsExporter says where the functions' metrics go: none (the
	// default), memory, log (a JSON log line each MetricsInterval) or gcp
	// (Cloud Monitoring of the project); see package metrics.
	MetricsExporter string
	MetricsInterval time.Duration
}

// Environment variable names.
const (
	EnvProject            = "BQCDC_PROJECT"
	EnvDataset            = "BQCDC_DATASET"
	EnvLocation           = "BQCDC_LOCATION"
	EnvBigQueryEndpoint   = "BQCDC_BIGQUERY_ENDPOINT"
	EnvStorageEndpoint    = "BQCDC_STORAGE_ENDPOINT"
	EnvRegistryURL        = "BQCDC_REGISTRY_URL"
	EnvRegistryUsername   = "BQCDC_REGISTRY_USERNAME"
	EnvRegistryPassword   = "BQCDC_REGISTRY_PASSWORD"
	EnvVisibilityLag      = "BQCDC_VISIBILITY_LAG"
	EnvChangelogRetention = "BQCDC_CHANGELOG_RETENTION_DAYS"
	EnvTombstoneRetention = "BQCDC_TOMBSTONE_RETENTION_DAYS"
	EnvSchemaEvolutionOff = "BQCDC_SCHEMA_EVOLUTION_OFF"
	EnvFlowsDir           = "BQCDC_FLOWS_DIR" // overrides the flows built into the functions
	EnvPubSubEmulator     = "PUBSUB_EMULATOR_HOST"
	EnvCompactConcurrency = "BQCDC_COMPACT_CONCURRENCY"
	EnvCompactBudget      = "BQCDC_COMPACT_BUDGET"
	EnvConnectTimeout     = "BQCDC_CONNECT_TIMEOUT" // clients.Config.ConnectTimeout; the CLI's --connect-timeout
	EnvChangeFeedEvery    = "BQCDC_CHANGE_FEED_EVERY"
	EnvSnapshotSettle     = "BQCDC_SNAPSHOT_SETTLE"
	EnvMaintainEvery      = "BQCDC_MAINTAIN_EVERY"
	EnvReplayKey          = "BQCDC_REPLAY_KEY" // a secret: Secret Manager in production
	EnvLogValues          = "BQCDC_LOG_VALUES"
	EnvAppendLedger       = "BQCDC_APPEND_LEDGER"
	EnvMetricsExporter    = "BQCDC_METRICS_EXPORTER"
	EnvMetricsInterval    = "BQCDC_METRICS_INTERVAL"
	// EnvIngestTimeout is the ingest function's request timeout, which the
	// compact function's visibility lag must cover (Terraform sets both).
	EnvIngestTimeout = "BQCDC_INGEST_TIMEOUT"
)

// Bounds of the settings. Each refuses a value that would silently turn a
// guarantee off rather than configure it.
const (
	// MaxRetentionDays bounds the retention settings: days are turned into
	// a time.Duration, which overflows past 106,751 days (retention would
	// silently stop, or become a day). 100 years keeps anything real; 0
	// already means "forever".
	MaxRetentionDays = 36_500
	// MinVisibilityLag is the shortest lag accepted when the ingest timeout
	// is not known (BQCDC_INGEST_TIMEOUT unset): the shortest ingest timeout
	// Terraform allows. A lag shorter than the ingest timeout lets the
	// watermark pass a row still being appended, which compaction then
	// never folds ("no late row is lost" would not hold).
	MinVisibilityLag = 10 * time.Second
	// MaxCompactConcurrency bounds the flows one compaction run folds at
	// once: each holds a query job, and BigQuery runs about 100 interactive
	// queries per project at once; more only queue (and hold memory).
	MaxCompactConcurrency = 100
	// MinReplayKeyBits is the least entropy a replay key must show, as the
	// key's length times the Shannon entropy of its byte frequencies: 32
	// spaces show 0 bits, "password" repeated 88; 16 random bytes in hex
	// (32 characters) show about 115 (below 96 about once in 20,000 keys),
	// `openssl rand -base64 32` about 215 (never below 190 in 20,000).
	MinReplayKeyBits = 96
)

// Defaults.
const (
	DefaultDataset            = "cdc"
	DefaultVisibilityLag      = 10 * time.Minute
	DefaultTombstoneRetention = 30
)

// MaxConnectTimeout bounds BQCDC_CONNECT_TIMEOUT: past an hour a dead
// endpoint is a hang by another name.
const MaxConnectTimeout = time.Hour

// ConnectTimeoutFromEnv reads BQCDC_CONNECT_TIMEOUT (unset:
// clients.DefaultConnectTimeout): how long a BigQuery client retries
// requests that cannot reach BigQuery before it fails.
func ConnectTimeoutFromEnv() (time.Duration, error) {
	v := os.Getenv(EnvConnectTimeout)
	if v == "" {
		return clients.DefaultConnectTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d > MaxConnectTimeout {
		return 0, fmt.Errorf("%s=%q: want a Go duration from 1s to %s, such as 30s", EnvConnectTimeout, v, MaxConnectTimeout)
	}
	return d, nil
}

// FromEnv reads the configuration.
func FromEnv() (Config, error) {
	var err error
	c := Config{
		BigQuery: clients.Config{
			Project:         first(os.Getenv(EnvProject), os.Getenv("GOOGLE_CLOUD_PROJECT")),
			Location:        os.Getenv(EnvLocation),
			Endpoint:        os.Getenv(EnvBigQueryEndpoint),
			StorageEndpoint: os.Getenv(EnvStorageEndpoint),
		},
		Dataset: first(os.Getenv(EnvDataset), DefaultDataset),
		// Secrets created with `echo ... | gcloud secrets create` end with a
		// newline; a URL or user name never does, and a blank URL means no
		// registry. A password keeps inner and leading spaces.
		RegistryURL:            strings.TrimSpace(os.Getenv(EnvRegistryURL)),
		RegistryUsername:       strings.TrimSpace(os.Getenv(EnvRegistryUsername)),
		RegistryPassword:       strings.TrimRight(os.Getenv(EnvRegistryPassword), "\r\n"),
		VisibilityLag:          DefaultVisibilityLag,
		TombstoneRetentionDays: DefaultTombstoneRetention,
		FlowsDir:               os.Getenv(EnvFlowsDir),
		PubSubEndpoint:         os.Getenv(EnvPubSubEmulator),
		MetricsExporter:        strings.TrimSpace(os.Getenv(EnvMetricsExporter)),
	}
	if c.BigQuery.Project == "" {
		return c, fmt.Errorf("%s (or GOOGLE_CLOUD_PROJECT) is not set: name the Google Cloud project", EnvProject)
	}
	if c.RegistryURL != "" {
		// Refused here, not quoted: a URL whose user information cannot be
		// told from its path would reach the registry client, its errors and
		// the logs with the password in it.
		if err := redact.CheckURL(c.RegistryURL); err != nil {
			return c, fmt.Errorf("%s: %w", EnvRegistryURL, err)
		}
	}
	if err := c.readVisibilityLag(); err != nil {
		return c, err
	}
	if c.BigQuery.ConnectTimeout, err = ConnectTimeoutFromEnv(); err != nil {
		return c, err
	}
	if err := c.readDurations(); err != nil {
		return c, err
	}
	switch c.MetricsExporter {
	case "", "none", "memory", "log", "gcp":
	default:
		return c, fmt.Errorf("%s=%q: want none, memory, log or gcp", EnvMetricsExporter, c.MetricsExporter)
	}
	if c.CompactConcurrency, err = boundedInt(EnvCompactConcurrency, 8, 1, MaxCompactConcurrency, "flows folded at once"); err != nil {
		return c, err
	}
	if c.ChangelogRetentionDays, err = boundedInt(EnvChangelogRetention, 0, 0, MaxRetentionDays, "days; 0 keeps them forever"); err != nil {
		return c, err
	}
	if c.TombstoneRetentionDays, err = boundedInt(EnvTombstoneRetention, DefaultTombstoneRetention, 0, MaxRetentionDays, "days; 0 keeps them forever"); err != nil {
		return c, err
	}
	if c.ReplayKey, err = ReplayKeyFromEnv(); err != nil {
		return c, err
	}
	c.AppendLedger = true
	for _, b := range []struct {
		env string
		to  *bool
	}{{EnvLogValues, &c.LogValues}, {EnvAppendLedger, &c.AppendLedger}} {
		if v := os.Getenv(b.env); v != "" {
			if *b.to, err = strconv.ParseBool(v); err != nil {
				return c, fmt.Errorf("%s=%q: want true or false", b.env, v)
			}
		}
	}
	for _, t := range strings.Split(os.Getenv(EnvSchemaEvolutionOff), ",") {
		if t = strings.TrimSpace(t); t != "" {
			c.SchemaEvolutionOff = append(c.SchemaEvolutionOff, t)
		}
	}
	return c, nil
}

// ReplayKeyFromEnv reads BQCDC_REPLAY_KEY (the function's and the CLI's):
// nil when unset, an error when too short to be a key. A trailing newline,
// as `echo ... | gcloud secrets create` leaves it, is not part of the key.
// The error never quotes the value.
func ReplayKeyFromEnv() ([]byte, error) {
	v := strings.TrimRight(os.Getenv(EnvReplayKey), "\r\n")
	if v == "" {
		return nil, nil
	}
	if len(v) < proof.MinKeyLen {
		return nil, fmt.Errorf("%s is %d bytes long, want at least %d (e.g. openssl rand -base64 32)", EnvReplayKey, len(v), proof.MinKeyLen)
	}
	if bits := entropyBits(v); bits < MinReplayKeyBits {
		return nil, fmt.Errorf("%s shows %.0f bits of entropy (its length times the entropy of its byte frequencies), want at least %d: use random bytes (e.g. openssl rand -base64 32), not a repeated character or word", EnvReplayKey, bits, MinReplayKeyBits)
	}
	return []byte(v), nil
}

// entropyBits estimates the entropy of a key from its own bytes: its length
// times the Shannon entropy of their frequencies. It cannot see a pattern
// ("0123...") but it refuses what is plainly not random.
func entropyBits(key string) float64 {
	var counts [256]int
	for i := 0; i < len(key); i++ {
		counts[key[i]]++
	}
	n, h := float64(len(key)), 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return n * h
}

// readVisibilityLag reads BQCDC_VISIBILITY_LAG and checks it against the
// ingest timeout (BQCDC_INGEST_TIMEOUT, or MinVisibilityLag when unset).
// readDurations reads the settings that are durations, each within its
// bounds (unset: the default Config holds).
func (c *Config) readDurations() error {
	for _, d := range []struct {
		env  string
		to   *time.Duration
		ok   func(time.Duration) bool
		want string
	}{
		{EnvChangeFeedEvery, &c.ChangeFeedEvery, func(d time.Duration) bool { return d >= 0 && d <= 7*24*time.Hour }, "a Go duration from 0 (every run) to 168h, such as 1h"},
		{EnvSnapshotSettle, &c.SnapshotSettle, func(time.Duration) bool { return true }, "a Go duration (negative: off)"},
		{EnvMaintainEvery, &c.MaintainEvery, func(time.Duration) bool { return true }, "a Go duration (negative: never)"},
		{EnvCompactBudget, &c.CompactBudget, func(d time.Duration) bool { return d >= 0 }, "a non-negative Go duration such as 8m"},
		{EnvMetricsInterval, &c.MetricsInterval, func(d time.Duration) bool { return d >= 10*time.Second },
			"a Go duration of 10s or more (Cloud Monitoring takes a point per series at most every 5 s)"},
	} {
		v := os.Getenv(d.env)
		if v == "" {
			continue
		}
		x, err := time.ParseDuration(v)
		if err != nil || !d.ok(x) {
			return fmt.Errorf("%s=%q: want %s", d.env, v, d.want)
		}
		*d.to = x
	}
	return nil
}

func (c *Config) readVisibilityLag() error {
	floor, floorName := MinVisibilityLag, "the shortest ingest timeout Terraform allows"
	if v := os.Getenv(EnvIngestTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("%s=%q: want a positive Go duration such as 60s", EnvIngestTimeout, v)
		}
		floor, floorName = d, EnvIngestTimeout
	}
	if v := os.Getenv(EnvVisibilityLag); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("%s=%q: want a positive Go duration such as 3m", EnvVisibilityLag, v)
		}
		c.VisibilityLag = d
	}
	if c.VisibilityLag < floor {
		return fmt.Errorf("%s=%s is below %s (%s): a row still being appended would fall behind the compaction watermark and never be folded; want at least the ingest timeout plus clock skew", EnvVisibilityLag, c.VisibilityLag, floor, floorName)
	}
	return nil
}

// boundedInt reads a whole number between lo and hi (def when unset).
func boundedInt(name string, def, lo, hi int, unit string) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s=%.24q: want a whole number from %d to %d (%s)", name, v, lo, hi, unit)
	}
	return n, nil
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// Redacted describes the configuration for logs, without secrets.
func (c Config) Redacted() string {
	cred := "none"
	if c.RegistryUsername != "" || c.RegistryPassword != "" {
		cred = "basic auth (redacted)"
	}
	ep := "Google"
	if c.BigQuery.Emulated() {
		ep = c.BigQuery.Endpoint + " (emulator)"
	}
	if u := c.RegistryURL; u != redact.URL(u) {
		cred = "in the URL (redacted)"
	}
	replayKey := "none (replay ids ignored)"
	if len(c.ReplayKey) > 0 {
		replayKey = "set (redacted)"
	}
	return fmt.Sprintf("project=%s dataset=%s bigquery=%s registry=%s credentials=%s replay_key=%s log_values=%t append_ledger=%t",
		c.BigQuery.Project, c.Dataset, redact.URL(ep), redact.URL(c.RegistryURL), cred, replayKey, c.LogValues, c.AppendLedger)
}

// Lazy builds a value from the environment's configuration on its first
// successful use (a function's clients, at its first request). A failed
// build is not remembered: the next Get tries again, so a function whose
// configuration is fixed recovers without a redeploy.
type Lazy[T any] struct {
	build func(ctx context.Context, cfg Config) (T, error)
	mu    sync.Mutex
	v     T
	built bool
}

// NewLazy returns a Lazy that builds with build.
func NewLazy[T any](build func(ctx context.Context, cfg Config) (T, error)) *Lazy[T] {
	return &Lazy[T]{build: build}
}

// Get returns the value, building it first if needed.
func (l *Lazy[T]) Get(ctx context.Context) (T, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.built {
		return l.v, nil
	}
	cfg, err := FromEnv()
	if err != nil {
		return l.v, err
	}
	v, err := l.build(ctx, cfg)
	if err != nil {
		return l.v, err
	}
	l.v, l.built = v, true
	return v, nil
}
