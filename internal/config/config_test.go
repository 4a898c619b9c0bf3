package config

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestFromEnv(t *testing.T) {
	t.Setenv(EnvProject, "p")
	t.Setenv(EnvRegistryPassword, " s3cret\n")
	t.Setenv(EnvRegistryUsername, "u\n")
	t.Setenv(EnvRegistryURL, "https://registry.example.com\n")
	t.Setenv(EnvVisibilityLag, "3m")
	t.Setenv(EnvSchemaEvolutionOff, " a.b.c, ,d ")
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if c.RegistryURL != "https://registry.example.com" || c.RegistryUsername != "u" || c.RegistryPassword != " s3cret" {
		t.Errorf("registry settings not trimmed of the newline a secret often ends with: %q %q", c.RegistryURL, c.RegistryUsername)
	}
	if strings.Join(c.SchemaEvolutionOff, "|") != "a.b.c|d" {
		t.Errorf("schema evolution off = %q", c.SchemaEvolutionOff)
	}
	if c.Dataset != DefaultDataset || c.VisibilityLag != 3*time.Minute || c.TombstoneRetentionDays != DefaultTombstoneRetention {
		t.Errorf("config = %+v", c)
	}
	if strings.Contains(c.Redacted(), "s3cret") {
		t.Error("Redacted leaks the registry password")
	}
}

func TestFromEnvErrorsNameTheVariable(t *testing.T) {
	t.Setenv(EnvProject, "p")
	refused(t, EnvChangelogRetention, "-1")
	t.Setenv(EnvChangelogRetention, "")
	refused(t, EnvVisibilityLag, "soon")
	t.Setenv("GOOGLE_CLOUD_PROJECT", "")
	refused(t, EnvProject, "")
}

// refused sets the environment variable name to value and checks that
// FromEnv refuses it with an error naming the variable.
func refused(t *testing.T, name, value string) {
	t.Helper()
	t.Setenv(name, value)
	if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), name) {
		t.Errorf("%s=%q: err = %v, want one naming the variable", name, value, err)
	}
}

func TestLazyRetriesUntilBuilt(t *testing.T) {
	t.Setenv(EnvProject, "")
	t.Setenv("GOOGLE_CLOUD_PROJECT", "")
	builds := 0
	l := NewLazy(func(_ context.Context, cfg Config) (string, error) {
		builds++
		return cfg.BigQuery.Project, nil
	})
	if _, err := l.Get(context.Background()); err == nil {
		t.Fatal("built without a project")
	}
	t.Setenv(EnvProject, "p")
	for range 2 {
		if v, err := l.Get(context.Background()); err != nil || v != "p" {
			t.Fatalf("Get = %q, %v", v, err)
		}
	}
	if builds != 1 {
		t.Errorf("built %d times, want 1", builds)
	}
}

func TestRedactedMasksURLPassword(t *testing.T) {
	t.Setenv(EnvProject, "p")
	t.Setenv(EnvRegistryURL, "https://user:secret@registry.example.com:8081")
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	r := c.Redacted()
	if strings.Contains(r, "secret") || !strings.Contains(r, "registry=https://xxxxx@registry.example.com:8081") || !strings.Contains(r, "credentials=in the URL (redacted)") {
		t.Errorf("Redacted() = %s", r)
	}
	// A password with '/' and '+', percent-encoded: all of the user
	// information is masked, whatever it holds.
	t.Setenv(EnvRegistryURL, "https://us%2Ber:se%2Fcr%2Bet@registry.example.com:8081")
	if c, err = FromEnv(); err != nil {
		t.Fatal(err)
	}
	if r := c.Redacted(); strings.Contains(r, "cr%2Bet") || strings.Contains(r, "us%2Ber") || !strings.Contains(r, "registry=https://xxxxx@registry.example.com:8081") {
		t.Errorf("Redacted() = %s", r)
	}
}

// A registry URL whose user information cannot be told from its path is
// refused at configuration time, and the error does not quote it.
func TestRegistryURLRefusedUnquoted(t *testing.T) {
	t.Setenv(EnvProject, "p")
	for _, url := range []string{"https://user:se/cr+et@registry.example.com", "https://user:1234/cr+et@registry.example.com",
		"https://user:se?cr+et@registry.example.com", "https://user:se cr+et@registry.example.com", "registry.example.com:8081"} {
		t.Setenv(EnvRegistryURL, url)
		_, err := FromEnv()
		if err == nil || !strings.Contains(err.Error(), EnvRegistryURL) || strings.Contains(err.Error(), "cr+et") || strings.Contains(err.Error(), "example") {
			t.Errorf("%s: err = %v, want one naming %s and not quoting the URL", url, err, EnvRegistryURL)
		}
	}
}

func TestReplayKeyAndLogValues(t *testing.T) {
	t.Setenv(EnvProject, "p")
	const key = "0123456789abcdef0123456789abcdef-secret"
	t.Setenv(EnvReplayKey, key+"\n")
	t.Setenv(EnvLogValues, "true")
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if string(c.ReplayKey) != key || !c.LogValues {
		t.Errorf("replay key %q, log values %v", c.ReplayKey, c.LogValues)
	}
	if r := c.Redacted(); strings.Contains(r, "secret") || !strings.Contains(r, "replay_key=set") || !strings.Contains(r, "log_values=true") {
		t.Errorf("Redacted = %s", r)
	}

	t.Setenv(EnvReplayKey, "short-secret")
	if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), EnvReplayKey) || strings.Contains(err.Error(), "short-secret") {
		t.Errorf("a short key: err = %v, want one naming the variable and not the value", err)
	}
	t.Setenv(EnvReplayKey, "")
	refused(t, EnvLogValues, "maybe")
	t.Setenv(EnvLogValues, "")
	if c, err := FromEnv(); err != nil || c.ReplayKey != nil || c.LogValues || !strings.Contains(c.Redacted(), "replay_key=none") {
		t.Errorf("defaults: %+v, %v", c, err)
	}
}

func TestMetricsSettings(t *testing.T) {
	t.Setenv(EnvProject, "p")
	t.Setenv(EnvMetricsExporter, " gcp ")
	t.Setenv(EnvMetricsInterval, "30s")
	c, err := FromEnv()
	if err != nil || c.MetricsExporter != "gcp" || c.MetricsInterval != 30*time.Second {
		t.Fatalf("metrics settings = %q %v (%v)", c.MetricsExporter, c.MetricsInterval, err)
	}
	for name, value := range map[string]string{EnvMetricsExporter: "prometheus", EnvMetricsInterval: "1s"} {
		t.Run(name, func(t *testing.T) { refused(t, name, value) })
	}
}

// Settings that would silently turn a guarantee off are refused, naming the
// variable.
func TestUnsafeSettingsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		err  string // names the variable; "" for accepted
	}{
		{name: "defaults"},
		{name: "retention 100 years", env: map[string]string{EnvChangelogRetention: "36500", EnvTombstoneRetention: "36500"}},
		{name: "changelog retention overflowing time.Duration", env: map[string]string{EnvChangelogRetention: "106752"}, err: EnvChangelogRetention},
		{name: "tombstone retention 2^53", env: map[string]string{EnvTombstoneRetention: "9007199254740992"}, err: EnvTombstoneRetention},
		{name: "negative retention", env: map[string]string{EnvChangelogRetention: "-1"}, err: EnvChangelogRetention},
		{name: "lag 0", env: map[string]string{EnvVisibilityLag: "0s"}, err: EnvVisibilityLag},
		{name: "lag negative", env: map[string]string{EnvVisibilityLag: "-1m"}, err: EnvVisibilityLag},
		{name: "lag 1s, timeout unknown", env: map[string]string{EnvVisibilityLag: "1s"}, err: EnvVisibilityLag},
		{name: "lag 10s, timeout unknown", env: map[string]string{EnvVisibilityLag: "10s"}},
		{name: "lag below the ingest timeout", env: map[string]string{EnvVisibilityLag: "59s", EnvIngestTimeout: "60s"}, err: EnvVisibilityLag},
		{name: "lag the ingest timeout plus skew", env: map[string]string{EnvVisibilityLag: "180s", EnvIngestTimeout: "60s"}},
		{name: "default lag below a long ingest timeout", env: map[string]string{EnvIngestTimeout: "11m"}, err: EnvVisibilityLag},
		{name: "ingest timeout not a duration", env: map[string]string{EnvIngestTimeout: "60"}, err: EnvIngestTimeout},
		{name: "concurrency 100", env: map[string]string{EnvCompactConcurrency: "100"}},
		{name: "concurrency 10^6", env: map[string]string{EnvCompactConcurrency: "1000000"}, err: EnvCompactConcurrency},
		{name: "concurrency 0", env: map[string]string{EnvCompactConcurrency: "0"}, err: EnvCompactConcurrency},
		{name: "replay key of 32 spaces", env: map[string]string{EnvReplayKey: strings.Repeat(" ", 32)}, err: EnvReplayKey},
		{name: "replay key of one character", env: map[string]string{EnvReplayKey: strings.Repeat("k", 64)}, err: EnvReplayKey},
		{name: "replay key a repeated word", env: map[string]string{EnvReplayKey: strings.Repeat("password", 4)}, err: EnvReplayKey},
		{name: "replay key of 31 bytes", env: map[string]string{EnvReplayKey: "Zm9vYmFyYmF6cXV4cXV1eGNvcmdl12"}, err: EnvReplayKey},
		{name: "replay key base64 of 32 random bytes", env: map[string]string{EnvReplayKey: "q7Yb1m4+Xc9f0aR2/LwE8tGkPz3nVhJ5sUoD6iQyNxc="}},
		{name: "replay key hex of 16 random bytes", env: map[string]string{EnvReplayKey: "9f3c2a7be1d04856c3fa9e21b7d0486c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvProject, "p")
			for _, k := range []string{EnvChangelogRetention, EnvTombstoneRetention, EnvVisibilityLag, EnvIngestTimeout, EnvCompactConcurrency, EnvReplayKey} {
				t.Setenv(k, tc.env[k])
			}
			_, err := FromEnv()
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err+" ") && !strings.Contains(err.Error(), tc.err+"=")):
				t.Fatalf("err = %v, want one naming %s", err, tc.err)
			case tc.err == EnvReplayKey && err != nil && strings.Contains(err.Error(), tc.env[EnvReplayKey]):
				t.Fatalf("err = %v quotes the key", err)
			}
		})
	}
}

func TestEntropyBits(t *testing.T) {
	for key, want := range map[string]float64{
		strings.Repeat(" ", 32):            0,
		strings.Repeat("password", 4):      88,
		"0123456789abcdef0123456789abcdef": 128,
	} {
		if got := entropyBits(key); got < want-0.5 || got > want+0.5 {
			t.Errorf("entropyBits(%q) = %.1f, want %.0f", key, got, want)
		}
	}
}

// The append ledger is on unless turned off; anything but a boolean is
// refused, naming the variable.
func TestAppendLedger(t *testing.T) {
	t.Setenv(EnvProject, "p")
	c, err := FromEnv()
	if err != nil || !c.AppendLedger {
		t.Fatalf("default: ledger %v (%v), want on", c.AppendLedger, err)
	}
	t.Setenv(EnvAppendLedger, "false")
	if c, err = FromEnv(); err != nil || c.AppendLedger {
		t.Errorf("%s=false: ledger %v (%v), want off", EnvAppendLedger, c.AppendLedger, err)
	}
	refused(t, EnvAppendLedger, "sometimes")
}

// The compaction settings the CLI has flags for are settings of the
// function too (issue 39: one composition).
func TestSnapshotSettleAndMaintainEveryFromEnv(t *testing.T) {
	t.Setenv(EnvProject, "p")
	t.Setenv(EnvSnapshotSettle, "-1s")
	t.Setenv(EnvMaintainEvery, "6h")
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if c.SnapshotSettle != -time.Second || c.MaintainEvery != 6*time.Hour {
		t.Errorf("SnapshotSettle %s, MaintainEvery %s", c.SnapshotSettle, c.MaintainEvery)
	}
	t.Setenv(EnvMaintainEvery, "daily")
	if _, err := FromEnv(); err == nil {
		t.Error("BQCDC_MAINTAIN_EVERY=daily accepted")
	}
}
