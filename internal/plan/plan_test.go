package plan

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/dev/rendercases"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/sql/render"
)

var loc = catalog.Location{Project: "my-project", DefaultDataset: "cdc"}

func TestEveryKindHasAPlan(t *testing.T) {
	for k := flow.Kind(1); k.String() != "invalid"; k++ {
		if _, ok := kinds[k]; !ok {
			t.Errorf("kind %s has no row in kinds", k)
		}
	}
	if len(kinds) == 0 {
		t.Fatal("no kinds")
	}
}

// TestPlanMatchesRender: the view a plan renders is the one sql/render's
// goldens hold (they render through the same functions, picked by its
// tests' own table of kinds).
func TestPlanMatchesRender(t *testing.T) {
	flows := rendercases.Flows(t, filepath.Join("..", "..", "sql", "render", "testdata"))
	hint := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	for _, b := range flows {
		golden, err := os.ReadFile(filepath.Join("..", "..", "sql", "render", "testdata", "golden", b.Name+".sql"))
		if err != nil {
			t.Fatal(err)
		}
		v, err := For(b, loc).View(hint, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The goldens name their flow file from sql/render.
		got := strings.ReplaceAll(v.SQL, "../../sql/render/testdata", "testdata")
		if !strings.HasPrefix(string(golden), got+";\n") {
			t.Errorf("flow %s (%s): the plan's view is not the first statement of its golden", b.Name, b.Kind())
		}
	}
}

// TestObjectsAreClaimed: every object a plan makes has the name its flow
// claims (flow.Flow.Objects, which refuses a second claimant), and the
// plan makes every name its flow claims (but the state's copy, made only
// while a state moves).
func TestObjectsAreClaimed(t *testing.T) {
	flows := rendercases.Flows(t, filepath.Join("..", "..", "sql", "render", "testdata"))
	for _, b := range flows {
		claimed := map[string]bool{}
		for _, o := range b.Objects() {
			claimed[loc.Dataset(b.Flow)+"."+o.Name] = true
		}
		objs, err := For(b, loc).Objects(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			name := o.Dataset + "." + o.Name
			if !claimed[name] {
				t.Errorf("flow %s: the plan makes %s, which the flow does not claim", b.Name, name)
			}
			delete(claimed, name)
		}
		// The state's copy exists only while the state moves to another
		// partitioning (apply's relayout), which the plan does not list.
		delete(claimed, loc.Dataset(b.Flow)+"."+catalog.StateCopyName(b.Flow))
		if len(claimed) > 0 {
			t.Errorf("flow %s: claims %v, which its plan does not make", b.Name, claimed)
		}
	}
}

// TestStateLayouts: each kind's state table says its layout, and only a
// change-stream state is partitioned (by generation, or by bucket).
func TestStateLayouts(t *testing.T) {
	flows := rendercases.Flows(t, filepath.Join("..", "..", "sql", "render", "testdata"))
	for _, b := range flows {
		p := For(b, loc)
		st := p.StateTable()
		if st.Labels[catalog.StateLayoutLabel] != p.Layout || p.Layout == "" {
			t.Errorf("flow %s: state labelled %v, plan layout %q", b.Name, st.Labels, p.Layout)
		}
		if h, want := st.Labels[catalog.LabelLatenessHorizon], b.LatenessHorizonDays; want > 0 && h != strconv.Itoa(want) || want == 0 && h != "" {
			t.Errorf("flow %s: state labelled with a lateness horizon of %q days, its flow's is %d", b.Name, h, want)
		}
		_, stream := b.ChangelogSource()
		byGen, byBucket := st.TimePartitioning != nil, st.RangePartitioning != nil
		if byGen == byBucket && stream || byGen && byBucket || (p.Machine() == Stream) != stream {
			t.Errorf("flow %s: partitioning %v %v, machine %d, reads a changelog %v", b.Name, st.TimePartitioning, st.RangePartitioning, p.Machine(), stream)
		}
		if byBucket {
			r := st.RangePartitioning
			if r.Field != catalog.ColStateBucket || r.Range.Start != 0 || r.Range.End != int64(render.StatePartitions(b)) || render.StatePartitions(b) < b.StateBuckets || r.Range.Interval != 1 || b.StateBuckets == 0 {
				t.Errorf("flow %s of %d buckets: partitioned %+v %+v", b.Name, b.StateBuckets, r, r.Range)
			}
			if _, ok := p.StateColumns().Lookup(catalog.ColStateBucket); !ok {
				t.Errorf("flow %s: a state of buckets without %s", b.Name, catalog.ColStateBucket)
			}
		}
		if (p.ChangeTable() != nil) != b.ChangeFeed() {
			t.Errorf("flow %s: change table %v, change feed %v", b.Name, p.ChangeTable() != nil, b.ChangeFeed())
		}
		if p.Shape() != render.Current && p.Shape() != render.History {
			t.Errorf("flow %s: shape %+v", b.Name, p.Shape())
		}
	}
}
