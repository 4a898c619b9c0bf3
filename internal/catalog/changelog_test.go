package catalog

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/google/go-cmp/cmp"
)

func TestTableName(t *testing.T) {
	for in, want := range map[string]string{
		"dbserver1.inventory.customers": "dbserver1_inventory_customers_changelog",
		"app-events~v2":                 "app_events_v2_changelog",
	} {
		if got := TableName(in); got != want {
			t.Errorf("TableName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSchemaRejectsReservedPrefix(t *testing.T) {
	if _, err := Schema(schema.Columns{{Name: "_CDC_op", Type: schema.String}}); err == nil {
		t.Error("a source column with the _cdc_ prefix was accepted")
	}
	cols, err := Schema(schema.Columns{{Name: "id", Type: schema.Int64}})
	if err != nil || len(cols) != 1+len(MetadataColumns()) || cols[0].Name != "id" {
		t.Errorf("Schema = %v, %v", cols.Names(), err)
	}
}

func TestDeadLetterRow(t *testing.T) {
	at := time.UnixMicro(5)
	got := DeadLetter{At: at, Stage: "wire", Reason: "bad magic",
		Delivery: Delivery{Topic: "t", MessageID: "9", Data: []byte{1}, Attributes: map[string]string{"b": "2", "a": "1"}}}.Row()
	want := map[string]any{"dead_lettered_at": int64(5), "topic": "t", "message_id": "9", "data": []byte{1}, "stage": "wire", "reason": "bad magic",
		"attributes": []any{map[string]any{"key": "a", "value": "1"}, map[string]any{"key": "b", "value": "2"}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("DeadLetter.Row (-want +got):\n%s", d)
	}
}

func TestSchemaColumnLimit(t *testing.T) {
	image := make(schema.Columns, limits.MaxColumns-11)
	for i := range image {
		image[i] = schema.Column{Name: fmt.Sprintf("c%d", i), Type: schema.Int64}
	}
	if _, err := Schema(image); err != nil {
		t.Fatalf("%d image columns and the metadata: %v", len(image), err)
	}
	image = append(image, schema.Column{Name: "one_more", Type: schema.Int64})
	if _, err := Schema(image); !errors.Is(err, limits.ErrLimit) || !strings.Contains(err.Error(), "BigQuery allows 10000") {
		t.Fatalf("error %v, want the column limit", err)
	}
}

func TestIsLabelValueOf(t *testing.T) {
	long := strings.Repeat("a", 70)
	for _, s := range []string{"db.inv.t", "db-inv-t", "db_inv_t", "DB.Inv.T", "Größe.t", long, "x", ""} {
		for _, v := range []string{LabelValue("db.inv.t"), LabelValue("db-inv-t"), LabelValue(s), LabelValue(long), "Db_inv_t", ""} {
			if got, want := IsLabelValueOf(v, s), LabelValue(s) == v; got != want {
				t.Errorf("IsLabelValueOf(%q, %q) = %v, want %v", v, s, got, want)
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { IsLabelValueOf("db_inv_t", "db.inv.t") }); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}

func TestSourceHash(t *testing.T) {
	topics := []string{"a.b", "a_b", "a+b", "a~b", "a%b", "A.b", "a-b", "a%2Eb"}
	seen := map[string]string{}
	for _, topic := range topics {
		h := SourceHash(topic)
		if LabelValue(h) != h || len(h) != 32 {
			t.Errorf("SourceHash(%q) = %q: not a label value of 32 characters", topic, h)
		}
		if other, ok := seen[h]; ok {
			t.Errorf("%q and %q hash alike", topic, other)
		}
		seen[h] = topic
		for _, other := range topics {
			if got := IsSourceHashOf(h, other); got != (other == topic) {
				t.Errorf("IsSourceHashOf(SourceHash(%q), %q) = %v", topic, other, got)
			}
		}
	}
	if IsSourceHashOf(SourceHash("a.b")[:31], "a.b") {
		t.Error("a cut hash matches")
	}
	if n := testing.AllocsPerRun(100, func() { IsSourceHashOf("0123456789abcdef0123456789abcdef", "db.inv.t") }); n != 0 {
		t.Errorf("IsSourceHashOf allocates %.0f times", n)
	}
}

// A run that held its change feed says so in its row, and only such a run
// fills the column (the status view reads the newest run's).
func TestCompactionRunRowFeedHeld(t *testing.T) {
	at := time.UnixMicro(7)
	run := CompactionRun{RunAt: at, Flow: "f", Outcome: "compacted"}
	if _, ok := run.Row()["change_feed_held"]; ok {
		t.Error("a run that held nothing fills change_feed_held")
	}
	run.FeedHeld = "drop the change table"
	if got := run.Row()["change_feed_held"]; got != "drop the change table" {
		t.Errorf("change_feed_held = %v", got)
	}
	if !slices.Contains(CompactionRunsColumns().Names(), "change_feed_held") {
		t.Error("the runs table has no change_feed_held column")
	}
}

// A run that touched keys outside its state's key range says so in its
// row; one that did not leaves the column NULL.
func TestCompactionRunRowKeysOutsideRange(t *testing.T) {
	run := CompactionRun{RunID: "r", Flow: "f"}
	if _, ok := run.Row()["keys_outside_range"]; ok {
		t.Error("a run inside its range fills keys_outside_range")
	}
	run.KeysOutsideRange = true
	if got := run.Row()["keys_outside_range"]; got != true {
		t.Errorf("keys_outside_range = %v", got)
	}
	if !slices.Contains(CompactionRunsColumns().Names(), "keys_outside_range") {
		t.Error("the runs table has no keys_outside_range column")
	}
}
