package terraform_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/metrics"
	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// googleMetrics are the Google-defined metrics the dashboard and alerts may
// name besides bqcdc's own.
var googleMetrics = map[string]bool{
	"pubsub.googleapis.com/subscription/dead_letter_message_count":  true,
	"pubsub.googleapis.com/subscription/oldest_unacked_message_age": true,
	"run.googleapis.com/request_count":                              true,
}

var (
	metricTypeRe  = regexp.MustCompile(`metric\.type = "([^"]+)"`)
	metricLabelRe = regexp.MustCompile(`metric\.label\.([a-z_]+)`)
)

// filters returns every string in body that names a metric type, with its
// interpolations shown as ${...}.
func filters(body hclsyntax.Node) []string {
	var out []string
	hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
		tmpl, ok := n.(*hclsyntax.TemplateExpr)
		if !ok {
			return nil
		}
		var b strings.Builder
		for _, p := range tmpl.Parts {
			if lit, ok := p.(*hclsyntax.LiteralValueExpr); ok && lit.Val.Type().FriendlyName() == "string" {
				b.WriteString(lit.Val.AsString())
			} else {
				b.WriteString("${...}")
			}
		}
		if s := b.String(); strings.Contains(s, "metric.type") {
			out = append(out, s)
		}
		return nil
	})
	return out
}

// checkFilter returns the metric types a filter names, and a problem for
// each metric the code does not emit and each label its instrument does
// not carry.
func checkFilter(filter string, instruments map[string]metrics.Instrument) (types, problems []string) {
	for _, m := range metricTypeRe.FindAllStringSubmatch(filter, -1) {
		typ := m[1]
		types = append(types, typ)
		if googleMetrics[typ] {
			continue
		}
		in, ok := instruments[strings.TrimPrefix(typ, metrics.MetricTypePrefix)]
		if !ok || !strings.HasPrefix(typ, metrics.MetricTypePrefix) {
			problems = append(problems, fmt.Sprintf("metric %s is not one internal/metrics emits (%v)", typ, metrics.Names()))
			continue
		}
		for _, l := range metricLabelRe.FindAllStringSubmatch(filter, -1) {
			if !slicesContain(in.Labels, l[1]) {
				problems = append(problems, fmt.Sprintf("%s has no label %s (it has %v)", typ, l[1], in.Labels))
			}
		}
	}
	if len(types) == 0 {
		problems = append(problems, fmt.Sprintf("filter %q names no metric type", filter))
	}
	return types, problems
}

func checked(t *testing.T, where, filter string, instruments map[string]metrics.Instrument) []string {
	t.Helper()
	types, problems := checkFilter(filter, instruments)
	for _, p := range problems {
		t.Errorf("%s: %s", where, p)
	}
	return types
}

func slicesContain(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Every alert policy and dashboard chart names only metrics the code emits
// (with labels their instruments carry) or Google's; every alert notifies
// the channels; the dashboard shows every instrument.
func TestAlertsAndDashboardUseEmittedMetrics(t *testing.T) {
	root := config(t).module(t, ".")
	instruments := map[string]metrics.Instrument{}
	for _, in := range metrics.Instruments() {
		instruments[in.Name] = in
	}
	policies := alertPolicies(t, root)
	names := sortedKeys(policies)
	if want := []string{"backlog", "compaction", "dead_letters", "freshness", "function_errors"}; !cmp.Equal(want, names) {
		t.Errorf("alert policies = %v, want %v", names, want)
	}
	alerted := map[string]bool{}
	for _, name := range names {
		fs := filters(policies[name])
		if len(fs) == 0 {
			t.Errorf("alert policy %s names no metric", name)
		}
		for _, f := range fs {
			for _, typ := range checked(t, "alert policy "+name, f, instruments) {
				alerted[typ] = true
			}
		}
	}
	for _, m := range []string{metrics.IngestMessages, metrics.IngestLag, metrics.CompactionRuns, metrics.CompactionUnfoldedAge} {
		if !alerted[metrics.MetricTypePrefix+m] {
			t.Errorf("no alert policy watches %s", m)
		}
	}
	charts := root.locals["dashboard_charts"]
	if charts == nil || root.resourcesOfType("google_monitoring_dashboard")["bqcdc"] == nil {
		t.Fatal("no google_monitoring_dashboard.bqcdc built from local.dashboard_charts")
	}
	shown := map[string]bool{}
	for _, f := range filters(charts.Expr) {
		for _, typ := range checked(t, "dashboard", f, instruments) {
			shown[strings.TrimPrefix(typ, metrics.MetricTypePrefix)] = true
		}
	}
	for _, n := range metrics.Names() {
		if !shown[n] {
			t.Errorf("the dashboard does not show %s", n)
		}
	}
}

// alertPolicies returns the alert policies of the root module by name, each
// as what holds its filters: an entry of local.alert_policies (rendered by
// the resource whose for_each is that local) or a resource body of its own.
// Every alert policy resource must notify local.channels.
func alertPolicies(t *testing.T, root *tfModule) map[string]hclsyntax.Node {
	t.Helper()
	out := map[string]hclsyntax.Node{}
	for name, r := range root.resourcesOfType("google_monitoring_alert_policy") {
		if !refersTo(attrExpr(r.Body, "notification_channels"), "local.channels") {
			t.Errorf("alert policy %s does not notify local.channels", name)
		}
		if !refersTo(attrExpr(r.Body, "for_each"), "local.alert_policies") {
			out[name] = r.Body
			continue
		}
		table := must(t, root.locals, "alert_policies", "no local.alert_policies in the root module")
		items, diags := hcl.ExprMap(table.Expr)
		if diags.HasErrors() {
			t.Fatalf("local.alert_policies must be an object literal: %v", diags)
		}
		for _, item := range items {
			key, ok := literalString(item.Key)
			if !ok {
				t.Fatalf("%s: local.alert_policies keys must be literal policy names", item.Key.Range())
			}
			out[key] = item.Value.(hclsyntax.Expression)
		}
	}
	return out
}

// The metric descriptors Terraform declares are the instruments the code
// creates: kind, value type, unit and labels (the exporter does not create
// descriptors: internal/metrics disables it).
func TestMetricDescriptorsMatchInstruments(t *testing.T) {
	root := config(t).module(t, ".")
	def := must(t, root.locals, "metrics", "no local.metrics in the root module")
	v, diags := def.Expr.Value(nil)
	if diags.HasErrors() {
		t.Fatalf("local.metrics must be a literal: %v", diags)
	}
	got := map[string]metrics.Instrument{}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		in := metrics.Instrument{Name: k.AsString(), Kind: e.GetAttr("kind").AsString(), ValueType: e.GetAttr("value").AsString(), Unit: e.GetAttr("unit").AsString(),
			Description: e.GetAttr("description").AsString()}
		for li := e.GetAttr("labels").ElementIterator(); li.Next(); {
			_, l := li.Element()
			in.Labels = append(in.Labels, l.AsString())
		}
		got[in.Name] = in
	}
	want := map[string]metrics.Instrument{}
	for _, in := range metrics.Instruments() {
		want[in.Name] = in
	}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") })); d != "" {
		t.Errorf("local.metrics (-internal/metrics +terraform):\n%s", d)
	}
	md := root.resourcesOfType("google_monitoring_metric_descriptor")["bqcdc"]
	if md == nil || !refersTo(attrExpr(md.Body, "for_each"), "local.metrics") {
		t.Error("google_monitoring_metric_descriptor.bqcdc must be for_each over local.metrics")
	}
}

// With metrics exported, the functions' accounts may write them, and only
// at project level (where monitoring.timeSeries.create lives).
func TestFunctionsMayWriteMetrics(t *testing.T) {
	root := config(t).module(t, ".")
	writers := map[string]string{}
	for name, r := range root.resourcesOfType("google_project_iam_member") {
		if role, _ := literalString(attrExpr(r.Body, "role")); role == "roles/monitoring.metricWriter" {
			for _, acct := range []string{"ingest", "compact"} {
				if refersTo(attrExpr(r.Body, "member"), "google_service_account."+acct) {
					writers[acct] = name
				}
			}
		}
	}
	if len(writers) != 2 {
		t.Errorf("roles/monitoring.metricWriter grants = %v, want one for each function's account", writers)
	}
	for _, fn := range []string{"ingest", "compact"} {
		if !refersTo(functionEnv(t, root, fn)["BQCDC_METRICS_EXPORTER"], "local.metrics_exporter") {
			t.Errorf("function %s: BQCDC_METRICS_EXPORTER must be local.metrics_exporter", fn)
		}
	}
}

// The checker fires on a metric the code does not emit and on a label its
// instrument lacks.
func TestMetricCheckerFires(t *testing.T) {
	instruments := map[string]metrics.Instrument{}
	for _, in := range metrics.Instruments() {
		instruments[in.Name] = in
	}
	for _, bad := range []string{
		`metric.type = "workload.googleapis.com/bqcdc.ingest.mesages"`,
		`metric.type = "workload.googleapis.com/bqcdc.ingest.lag" AND metric.label.flow = "x"`,
		`resource.type = "generic_task"`,
	} {
		if _, problems := checkFilter(bad, instruments); len(problems) == 0 {
			t.Errorf("checkFilter accepted %q", bad)
		}
	}
}
