package terraform_test

import (
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/bqcdc/bqcdc/internal/dev/testfile"
	"github.com/bqcdc/bqcdc/internal/flow"
)

// The contract between the Terraform and the Go code and flows: sources,
// entry points, environment, and who may call or read what ((e) to (h)).

// (e) The demo deploys exactly the sources the flows read.
func TestDemoSourcesMatchFlows(t *testing.T) {
	flows, errs := flow.ParseDir(filepath.Join("..", "sql", "flows"))
	if len(errs) > 0 {
		t.Fatalf("parsing sql/flows: %v", errs)
	}
	want := flow.Sources(flows)
	sort.Strings(want)

	tfvars := config(t).tfvarsFile(t, "examples/demo/terraform.tfvars")
	sources := tfvars.body.Attributes["sources"]
	if sources == nil {
		t.Fatal("examples/demo/terraform.tfvars sets no sources")
	}
	got, ok := objectKeys(sources.Expr)
	if !ok {
		t.Fatalf("%s: sources must be an object with literal topic names as keys", sources.SrcRange)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sources in examples/demo/terraform.tfvars differ from the FROM STREAM sources of sql/flows (-flows +tfvars):\n%s"+
			"Every flow source needs a topic and push subscription; a topic without a flow has no changelog table.", diff)
	}
}

// (e) Each source gets a topic, a push subscription to ingest, a dead-letter
// topic with its grants and a BigQuery subscription draining it; the root
// instantiates the module once per entry of var.sources.
func TestSourceModuleWiring(t *testing.T) {
	cfg := config(t)
	name, call := cfg.module(t, ".").onlyCallTo(t, "./modules/source")
	if !refersTo(attrExpr(call.Body, "for_each"), "var.sources") {
		t.Errorf("module %q must use for_each = var.sources (one instance per topic, keyed by topic name)", name)
	}
	if got := references(attrExpr(call.Body, "topic_name")); !cmp.Equal(got, []string{"each.key"}) {
		t.Errorf("module %q: topic_name must be each.key, got %v", name, got)
	}
	if !refersTo(attrExpr(call.Body, "ingest_uri"), `module.function["ingest"].uri`) {
		t.Errorf(`module %q: ingest_uri must be module.function["ingest"].uri`, name)
	}

	src := cfg.module(t, "modules/source")
	topics := src.resourcesOfType("google_pubsub_topic")
	if topics["main"] == nil || len(topics) != 2 {
		t.Fatalf("modules/source must declare google_pubsub_topic.main and one dead-letter topic, got %v", sortedKeys(topics))
	}
	var dlq string
	for name := range topics {
		if name != "main" {
			dlq = "google_pubsub_topic." + name
		}
	}

	var push, drain int
	for name, sub := range src.resourcesOfType("google_pubsub_subscription") {
		topic := attrExpr(sub.Body, "topic")
		switch {
		case child(sub.Body, "push_config") != nil:
			push++
			pc := childBody(sub.Body, "push_config")
			if !refersTo(topic, "google_pubsub_topic.main") {
				t.Errorf("push subscription %q must subscribe to google_pubsub_topic.main", name)
			}
			if !src.refersToExpanding(attrExpr(pc, "push_endpoint"), "var.ingest_uri") {
				t.Errorf("push subscription %q must push to the ingest function (var.ingest_uri)", name)
			}
			oidc := childBody(pc, "oidc_token")
			if !refersTo(attrExpr(oidc, "service_account_email"), "var.push_service_account_email") || !refersTo(attrExpr(oidc, "audience"), "var.ingest_uri") {
				t.Errorf("push subscription %q must authenticate with an OIDC token of var.push_service_account_email for audience var.ingest_uri", name)
			}
			dl := childBody(sub.Body, "dead_letter_policy")
			// Its own dead-letter topic, or the one the deployment shares.
			dlTopic := attrExpr(dl, "dead_letter_topic")
			if !src.refersToExpanding(dlTopic, dlq) || !src.refersToExpanding(dlTopic, "var.shared_dead_letter_topic") || attrExpr(dl, "max_delivery_attempts") == nil {
				t.Errorf("push subscription %q needs dead_letter_policy { dead_letter_topic = %s.id (or var.shared_dead_letter_topic), max_delivery_attempts = ... }", name, dlq)
			}
		case child(sub.Body, "bigquery_config") != nil:
			drain++
			if !refersTo(topic, dlq) {
				t.Errorf("BigQuery subscription %q must drain the dead-letter topic %s", name, dlq)
			}
			bq := childBody(sub.Body, "bigquery_config")
			if exprSourceOf(src, bq, "write_metadata") != "true" {
				t.Errorf("BigQuery subscription %q must set write_metadata = true (the table schema has the metadata columns)", name)
			}
		}
	}
	if push != 1 || drain != 1 {
		t.Errorf("modules/source must have exactly one push subscription and one dead-letter BigQuery subscription, got %d and %d", push, drain)
	}

	grants := map[string]string{} // role -> resource type it is granted on
	for key, r := range src.resources {
		role, _ := literalString(attrExpr(r.Body, "role"))
		if role != "" && refersTo(attrExpr(r.Body, "member"), "var.pubsub_service_agent_member") {
			grants[role] = strings.SplitN(key, ".", 2)[0]
		}
	}
	want := map[string]string{
		"roles/pubsub.publisher":  "google_pubsub_topic_iam_member",        // publish to the dead-letter topic
		"roles/pubsub.subscriber": "google_pubsub_subscription_iam_member", // acknowledge the forwarded message
	}
	if diff := cmp.Diff(want, grants); diff != "" {
		t.Errorf("grants of the Pub/Sub service agent in modules/source (-want +got):\n%s", diff)
	}
}

func exprSourceOf(m *tfModule, body *hclsyntax.Body, attr string) string {
	a := body.Attributes[attr]
	if a == nil {
		return ""
	}
	return exprSource(m.fileOf(a.SrcRange), a.Expr)
}

// The root module deploys the functions with one call of modules/function,
// for_each = local.functions: an entry per function, keyed by role (ingest,
// compact), holding what sets it apart.

// functionEntries returns that call and the entries of local.functions.
func functionEntries(t *testing.T, root *tfModule) (*hclsyntax.Block, map[string]hcl.Expression) {
	t.Helper()
	name, call := root.onlyCallTo(t, "./modules/function")
	if !cmp.Equal(references(attrExpr(call.Body, "for_each")), []string{"local.functions"}) {
		t.Fatalf("module %q: for_each must be local.functions (one instance per function, keyed by role)", name)
	}
	def := must(t, root.locals, "functions", "the root module must declare local.functions")
	items, diags := hcl.ExprMap(def.Expr)
	if diags.HasErrors() {
		t.Fatalf("local.functions must be an object literal: %v", diags)
	}
	entries := map[string]hcl.Expression{}
	for _, item := range items {
		key, ok := literalString(item.Key)
		if !ok {
			t.Fatalf("%s: local.functions keys must be literal roles", item.Key.Range())
		}
		entries[key] = item.Value
	}
	return call, entries
}

// functionArg returns what the call passes function fn as argument arg:
// each.value.ATTR read from fn's entry, or the call's own expression, the
// same for every function, when it reads nothing of each.value.
func functionArg(t *testing.T, root *tfModule, fn, arg string) hcl.Expression {
	t.Helper()
	call, entries := functionEntries(t, root)
	entry := entries[fn]
	if entry == nil {
		t.Fatalf("local.functions has no entry %q", fn)
	}
	expr := attrExpr(call.Body, arg)
	if e, ok := expr.(*hclsyntax.ScopeTraversalExpr); ok {
		if attr, ok := strings.CutPrefix(traversalString(e.Traversal), "each.value."); ok {
			return objectItem(entry, attr)
		}
	}
	for _, r := range references(expr) {
		if strings.HasPrefix(r, "each.value") {
			t.Fatalf("module function: %s must be each.value.ATTR, or read nothing of each.value", arg)
		}
	}
	return expr
}

// functionEnv returns the plain environment of function fn, by variable:
// the call's environment_variables must be merge(OBJECT, each.value.
// environment_variables), OBJECT holding what every function gets, and
// fn's entry an object literal too, so that both can be audited.
func functionEnv(t *testing.T, root *tfModule, fn string) map[string]hcl.Expression {
	t.Helper()
	call, entries := functionEntries(t, root)
	merge, ok := attrExpr(call.Body, "environment_variables").(*hclsyntax.FunctionCallExpr)
	if !ok || merge.Name != "merge" || len(merge.Args) != 2 || !cmp.Equal(references(merge.Args[1]), []string{"each.value.environment_variables"}) {
		t.Fatal("module function: environment_variables must be merge({ ... }, each.value.environment_variables)")
	}
	env := map[string]hcl.Expression{}
	for _, part := range []hcl.Expression{merge.Args[0], objectItem(entries[fn], "environment_variables")} {
		if part == nil {
			t.Fatalf("local.functions.%s has no environment_variables", fn)
		}
		pairs, diags := hcl.ExprMap(part)
		if diags.HasErrors() {
			t.Fatalf("%s: the environment variables of %s must be an object literal (so they can be audited)", part.Range(), fn)
		}
		for _, p := range pairs {
			k, ok := literalString(p.Key)
			if !ok {
				t.Fatalf("%s: environment variable names must be literals", p.Key.Range())
			}
			if env[k] != nil {
				t.Errorf("function %s: %s is set twice", fn, k)
			}
			env[k] = p.Value
		}
	}
	return env
}

// (f) The entry points deployed are the names the Go code registers.
func TestEntryPointsMatchGoRegistrations(t *testing.T) {
	root := config(t).module(t, ".")
	_, entries := functionEntries(t, root)
	deployed := map[string]string{}
	for fn := range entries {
		ep, ok := literalString(functionArg(t, root, fn, "entry_point"))
		if !ok {
			t.Errorf("function %q: entry_point must be a literal", fn)
		}
		deployed[fn] = ep
	}
	if diff := cmp.Diff([]string{"compact", "ingest"}, sortedKeys(deployed)); diff != "" {
		t.Fatalf("functions deployed by the root module (-want +got):\n%s", diff)
	}
	// Each function's package is functions/<role>.
	for fn, kind := range map[string]string{"ingest": "HTTP", "compact": "HTTP"} {
		if name, ok := registeredName(t, fn, kind); ok && name != deployed[fn] {
			t.Errorf("function %q deploys entry point %q, but functions/%s registers functions.%s(%q, ...)", fn, deployed[fn], fn, kind, name)
		}
	}
}

// registeredName finds the single functions.<kind>("Name", ...) call in
// functions/<dir>; it reports an error and false if there is not exactly one.
func registeredName(t *testing.T, dir, kind string) (string, bool) {
	t.Helper()
	srcs := goSources(t, filepath.Join("..", "functions", dir, "*.go"))
	if len(srcs) == 0 {
		t.Errorf("functions/%s has no Go files: the %s function must register itself there with functions.%s(\"Name\", ...) (the deployment's entry point)", dir, dir, kind)
		return "", false
	}
	re := regexp.MustCompile(`functions\.` + kind + `\(\s*(?:"([^"]+)"|([A-Za-z_][A-Za-z0-9_]*))`)
	constDecl := regexp.MustCompile(`(?m)^\s*(?:const\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"([^"]+)"`)
	var names []string
	for _, f := range sortedKeys(srcs) {
		src := srcs[f]
		consts := map[string]string{}
		for _, m := range constDecl.FindAllStringSubmatch(src, -1) {
			consts[m[1]] = m[2]
		}
		for _, m := range re.FindAllStringSubmatch(src, -1) {
			switch {
			case m[1] != "":
				names = append(names, m[1])
			case consts[m[2]] != "":
				names = append(names, consts[m[2]])
			default:
				t.Errorf("%s: functions.%s registers %s, which is not a string constant of the file", f, kind, m[2])
			}
		}
	}
	if len(names) != 1 {
		t.Errorf("functions/%s: want exactly one functions.%s registration, found %q", dir, kind, names)
		return "", false
	}
	return names[0], true
}

// goSources returns the Go files matching pattern, but the tests, by path,
// with their text.
func goSources(t *testing.T, pattern string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			out[f] = testfile.Read(t, f)
		}
	}
	return out
}

// (f) The Cloud Run functions buildpack builds the package at the source root:
// it must import both function packages so their init() registrations run.
func TestRootPackageImportsBothFunctions(t *testing.T) {
	imports := map[string]bool{}
	for _, src := range goSources(t, filepath.Join("..", "*.go")) {
		for _, m := range regexp.MustCompile(`"(github\.com/bqcdc/bqcdc/functions/[a-z]+)"`).FindAllStringSubmatch(src, -1) {
			imports[m[1]] = true
		}
	}
	for _, pkg := range []string{"github.com/bqcdc/bqcdc/functions/ingest", "github.com/bqcdc/bqcdc/functions/compact"} {
		if !imports[pkg] {
			t.Errorf("no Go file at the repository root imports %s: the functions are deployed from the root package (bqcdc.go), which must import every function package", pkg)
		}
	}
}

// (g) Cloud Scheduler calls the compact function with an OIDC token of the
// dedicated scheduler account, which may invoke that service only.
func TestSchedulerCallsCompactWithOIDC(t *testing.T) {
	cfg := config(t)
	sched := cfg.module(t, "modules/scheduler")
	job := must(t, sched.resources, "google_cloud_scheduler_job.main", "modules/scheduler must declare google_cloud_scheduler_job.main")
	target := childBody(job.Body, "http_target")
	oidc := childBody(target, "oidc_token")
	if oidc == nil {
		t.Fatal("google_cloud_scheduler_job.main needs http_target { oidc_token { ... } }")
	}
	uriVar := onlyVar(t, attrExpr(target, "uri"), "http_target.uri")
	audVar := onlyVar(t, attrExpr(oidc, "audience"), "oidc_token.audience")
	saVar := onlyVar(t, attrExpr(oidc, "service_account_email"), "oidc_token.service_account_email")
	// The called URL may carry ?shard=i&shards=n; the audience is the
	// service URL alone, which Cloud Run checks.

	root := cfg.module(t, ".")
	// One call, with count = shards.
	name, call := root.onlyCallTo(t, "./modules/scheduler")
	const compactURI = `module.function["compact"].uri`
	if !refersTo(attrExpr(call.Body, uriVar), compactURI) {
		t.Errorf("module %q: %s (the called URL) must be %s, got %v", name, uriVar, compactURI, renderReferences(attrExpr(call.Body, uriVar), true))
	}
	if got := renderReferences(attrExpr(call.Body, audVar), true); len(got) != 1 || !refersTo(attrExpr(call.Body, audVar), compactURI) {
		t.Errorf("module %q: %s (the OIDC audience) must be exactly %s, got %v", name, audVar, compactURI, got)
	}
	if !refersTo(attrExpr(call.Body, saVar), "google_service_account.scheduler.email") {
		t.Errorf("module %q: %s must be google_service_account.scheduler.email, got %v", name, saVar, references(attrExpr(call.Body, saVar)))
	}

	invokers := 0
	for key, r := range root.resourcesOfType("google_cloud_run_v2_service_iam_member") {
		role, _ := literalString(attrExpr(r.Body, "role"))
		if role == "roles/run.invoker" && refersTo(attrExpr(r.Body, "member"), "google_service_account.scheduler") {
			invokers++
			if !refersTo(attrExpr(r.Body, "name"), `module.function["compact"].service_name`) {
				t.Errorf("%s: the scheduler account may invoke only the compact service", key)
			}
		}
	}
	if invokers != 1 {
		t.Errorf("want one roles/run.invoker grant for the scheduler account on the compact service, got %d", invokers)
	}
}

// onlyVar returns NAME when expr is exactly var.NAME.
func onlyVar(t *testing.T, expr hclsyntax.Expression, what string) string {
	t.Helper()
	refs := references(expr)
	if len(refs) != 1 || !strings.HasPrefix(refs[0], "var.") {
		t.Fatalf("%s must be a single module variable, got %v", what, refs)
	}
	return strings.TrimPrefix(refs[0], "var.")
}

// (h) Registry credentials and the replay key reach the ingest function
// only through Secret Manager, and only the ingest account may read those
// secrets.
func TestIngestCredentialsOnlyFromSecretManager(t *testing.T) {
	root := config(t).module(t, ".")
	registry := []string{"BQCDC_REGISTRY_PASSWORD", "BQCDC_REGISTRY_URL", "BQCDC_REGISTRY_USERNAME"}
	secretVars := map[string]string{"BQCDC_REPLAY_KEY": "var.replay_key_secret_id"}
	for _, k := range registry {
		secretVars[k] = "var.registry_" + strings.ToLower(strings.TrimPrefix(k, "BQCDC_REGISTRY_")) + "_secret_id"
	}
	all := append(slices.Clone(registry), "BQCDC_REPLAY_KEY")

	for _, fn := range []string{"ingest", "compact"} {
		for k := range functionEnv(t, root, fn) {
			if strings.HasPrefix(k, "BQCDC_REGISTRY_") || sensitiveName.MatchString(k) {
				t.Errorf("function %s: %s must not be a plain environment variable; use secret_environment_variables", fn, k)
			}
		}
	}
	// The secrets may be an object literal or a local defined as one.
	ingestSecrets := functionArg(t, root, "ingest", "secret_environment_variables")
	secretEnv := root.expandLocal(ingestSecrets)
	secrets, ok := objectKeys(secretEnv)
	if !ok || !cmp.Equal(secrets, all) {
		t.Errorf("function ingest: secret_environment_variables = %v, want exactly %v", secrets, all)
	}
	for k, v := range secretVars {
		item := objectItem(secretEnv, k)
		if item == nil || !refersTo(objectItem(item, "secret"), v) {
			t.Errorf("function ingest: %s must read the secret named by %s", k, v)
		}
	}
	if keys, ok := objectKeys(functionArg(t, root, "compact", "secret_environment_variables")); !ok || len(keys) != 0 {
		t.Errorf("function compact gets no secrets, got %v", keys)
	}

	fn := must(t, config(t).module(t, "modules/function").resources, "google_cloudfunctions2_function.main", "modules/function must declare google_cloudfunctions2_function.main")
	sc := childBody(fn.Body, "service_config")
	if refersTo(attrExpr(sc, "environment_variables"), "var.secret_environment_variables") {
		t.Error("modules/function must not copy secret_environment_variables into plain environment_variables")
	}
	dyn := child(sc, "dynamic")
	if dyn == nil || dyn.Labels[0] != "secret_environment_variables" || !refersTo(attrExpr(dyn.Body, "for_each"), "var.secret_environment_variables") {
		t.Error("modules/function must render var.secret_environment_variables as secret_environment_variables blocks")
	}

	// One secretAccessor grant per secret ingest reads: for_each over the
	// very map the function gets, so the two cannot drift apart.
	accessors := root.resourcesOfType("google_secret_manager_secret_iam_member")
	if len(accessors) != 1 {
		t.Errorf("want one google_secret_manager_secret_iam_member, for_each over ingest's secrets, got %v", sortedKeys(accessors))
	}
	for name, r := range accessors {
		fe := references(attrExpr(r.Body, "for_each"))
		if want := references(ingestSecrets); len(want) != 1 || !cmp.Equal(fe, want) {
			t.Errorf("google_secret_manager_secret_iam_member.%s: for_each = %v, want the ingest function's secret_environment_variables %v", name, fe, want)
		}
		if !cmp.Equal(references(attrExpr(r.Body, "secret_id")), []string{"each.value.secret"}) {
			t.Errorf("google_secret_manager_secret_iam_member.%s: secret_id must be each.value.secret", name)
		}
		if role, _ := literalString(attrExpr(r.Body, "role")); role != "roles/secretmanager.secretAccessor" {
			t.Errorf("google_secret_manager_secret_iam_member.%s: role %q, want roles/secretmanager.secretAccessor", name, role)
		}
		if !refersTo(attrExpr(r.Body, "member"), "google_service_account.ingest") {
			t.Errorf("google_secret_manager_secret_iam_member.%s: only the ingest account may read the registry secrets and the replay key", name)
		}
	}
}

// The contract's environment: compact's visibility lag is the ingest timeout
// plus a 120 s clock-skew margin, and the push ack deadline is that timeout.
func TestFunctionEnvironment(t *testing.T) {
	root := config(t).module(t, ".")
	for fn, want := range map[string][]string{
		"ingest":  {"BQCDC_APPEND_LEDGER", "BQCDC_DATASET", "BQCDC_LOCATION", "BQCDC_LOG_VALUES", "BQCDC_METRICS_EXPORTER", "BQCDC_PROJECT", "BQCDC_SCHEMA_EVOLUTION_OFF"},
		"compact": {"BQCDC_APPEND_LEDGER", "BQCDC_CHANGELOG_RETENTION_DAYS", "BQCDC_CHANGE_FEED_EVERY", "BQCDC_COMPACT_BUDGET", "BQCDC_COMPACT_CONCURRENCY", "BQCDC_DATASET", "BQCDC_INGEST_TIMEOUT", "BQCDC_LOCATION", "BQCDC_METRICS_EXPORTER", "BQCDC_PROJECT", "BQCDC_TOMBSTONE_RETENTION_DAYS", "BQCDC_VISIBILITY_LAG"},
	} {
		if diff := cmp.Diff(want, sortedKeys(functionEnv(t, root, fn))); diff != "" {
			t.Errorf("function %s environment_variables (-want +got):\n%s", fn, diff)
		}
	}
	// Both functions read the ledger switch from the one variable: ingest
	// writing it and compaction trusting it must agree.
	for _, fn := range []string{"ingest", "compact"} {
		if item := functionEnv(t, root, fn)["BQCDC_APPEND_LEDGER"]; !refersTo(item, "var.append_ledger") {
			t.Errorf("function %s: BQCDC_APPEND_LEDGER must come from var.append_ledger", fn)
		}
	}
	compactEnv := functionEnv(t, root, "compact")
	lag := compactEnv["BQCDC_VISIBILITY_LAG"]
	if !cmp.Equal(references(lag), []string{"local.visibility_lag"}) || root.locals["visibility_lag"] == nil {
		t.Fatal("BQCDC_VISIBILITY_LAG must be local.visibility_lag")
	}
	def := root.locals["visibility_lag"]
	if got := exprSource(root.fileOf(def.SrcRange), def.Expr); got != `"${var.ingest.timeout_seconds + 120}s"` {
		t.Errorf("local.visibility_lag = %s, want the ingest timeout plus 120 s", got)
	}
	// The compact function refuses a lag below the ingest timeout it is told.
	timeout := compactEnv["BQCDC_INGEST_TIMEOUT"]
	if got := exprSource(root.fileOf(timeout.Range()), timeout); got != `"${var.ingest.timeout_seconds}s"` {
		t.Errorf("compact's BQCDC_INGEST_TIMEOUT = %s, want the ingest timeout", got)
	}
	ack := attrExpr(root.calls["source_topic"].Body, "ack_deadline_seconds")
	if !cmp.Equal(references(ack), []string{"var.ingest.timeout_seconds"}) {
		t.Errorf("the push ack deadline must be var.ingest.timeout_seconds, got %v", references(ack))
	}
}

// The compact function deletes changelog partitions once compacted; a blind
// dataset-level expiration could drop rows compaction has not folded yet.
func TestDatasetHasNoBlindExpiration(t *testing.T) {
	n := 0
	for _, m := range config(t).modules {
		for key, r := range m.resourcesOfType("google_bigquery_dataset") {
			n++
			for _, a := range []string{"default_partition_expiration_ms", "default_table_expiration_ms"} {
				if r.Body.Attributes[a] != nil {
					t.Errorf("%s: google_bigquery_dataset.%s must not set %s", r.DefRange(), key, a)
				}
			}
		}
	}
	if n != 1 {
		t.Errorf("want exactly one google_bigquery_dataset, got %d", n)
	}
}

// (g) Snapshot flows read the user's tables of snapshots: the compact
// account gets read access on each listed table (table-level, never the
// dataset), the variable refuses what is not dataset.table, and the demo
// lists exactly the snapshot tables of sql/flows.
func TestSnapshotTablesReadByCompactOnly(t *testing.T) {
	cfg := config(t)
	root := cfg.module(t, ".")
	grant := must(t, root.resources, "google_bigquery_table_iam_member.compact_reads_snapshots", "the root module must declare google_bigquery_table_iam_member.compact_reads_snapshots")
	if !refersTo(attrExpr(grant.Body, "for_each"), "var.snapshot_tables") {
		t.Errorf("compact_reads_snapshots: for_each must be var.snapshot_tables, got %v", references(attrExpr(grant.Body, "for_each")))
	}
	if role, _ := literalString(attrExpr(grant.Body, "role")); role != "roles/bigquery.dataViewer" {
		t.Errorf("compact_reads_snapshots: role %q, want roles/bigquery.dataViewer (read only)", role)
	}
	if !refersTo(attrExpr(grant.Body, "member"), "google_service_account.compact.email") {
		t.Errorf("compact_reads_snapshots: member must be the compact account, got %v", references(attrExpr(grant.Body, "member")))
	}
	for key, r := range root.resourcesOfType("google_bigquery_dataset_iam_member") {
		if refersTo(attrExpr(r.Body, "dataset_id"), "var.snapshot_tables") {
			t.Errorf("%s: snapshot tables are granted per table, not per dataset", key)
		}
	}

	v := must(t, root.variables, "snapshot_tables", "the root module must declare variable snapshot_tables")
	set := func(names ...string) cty.Value {
		var vals []cty.Value
		for _, n := range names {
			vals = append(vals, cty.StringVal(n))
		}
		return variableValue(t, v, cty.SetVal(vals))
	}
	if failed := failedValidations(t, v, set("staging.customer_extracts", "staging.odd extracts", "s.t-2")); len(failed) > 0 {
		t.Errorf("valid snapshot tables refused: %v", failed)
	}
	for _, bad := range []string{"extracts", "p.staging.t", "my-ds.t", "staging.", ".t", "staging.`t`"} {
		if failed := failedValidations(t, v, set(bad)); len(failed) == 0 {
			t.Errorf("snapshot table %q accepted", bad)
		}
	}

	flows, errs := flow.ParseDir(filepath.Join("..", "sql", "flows"))
	if len(errs) > 0 {
		t.Fatalf("parsing sql/flows: %v", errs)
	}
	var want []string
	for _, s := range flow.SnapshotTables(flows) {
		want = append(want, s.String())
	}
	sort.Strings(want)
	var got []string
	if a := cfg.tfvarsFile(t, "examples/demo/terraform.tfvars").body.Attributes["snapshot_tables"]; a != nil {
		val, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		for it := val.ElementIterator(); it.Next(); {
			_, e := it.Element()
			got = append(got, e.AsString())
		}
	}
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("snapshot_tables in examples/demo/terraform.tfvars differ from the snapshot tables of sql/flows (-flows +tfvars):\n%s", diff)
	}
}

// Pub/Sub allows 10,000 topics and 10,000 subscriptions per project: the
// sources may share one dead-letter topic (drained by one BigQuery
// subscription, published to by the service agent), and a plan refuses more
// sources than the project can hold either way.
func TestSharedDeadLetterTopic(t *testing.T) {
	root := config(t).module(t, ".")
	call := must(t, root.calls, "source_topic", "the root module must call modules/source as source_topic")
	if !refersTo(attrExpr(call.Body, "shared_dead_letter_topic"), "google_pubsub_topic.shared_dead_letter") ||
		!refersTo(attrExpr(call.Body, "shared_dead_letter_topic"), "var.dead_letter_topic_per_source") {
		t.Error("source_topic: shared_dead_letter_topic must be google_pubsub_topic.shared_dead_letter unless var.dead_letter_topic_per_source")
	}
	sub := root.resourcesOfType("google_pubsub_subscription")["shared_dead_letter_to_bigquery"]
	if sub == nil || !refersTo(attrExpr(sub.Body, "topic"), "google_pubsub_topic.shared_dead_letter") {
		t.Fatal("google_pubsub_subscription.shared_dead_letter_to_bigquery must drain google_pubsub_topic.shared_dead_letter")
	}
	if bq := childBody(sub.Body, "bigquery_config"); bq == nil || exprSourceOf(root, bq, "write_metadata") != "true" || !refersTo(attrExpr(bq, "table"), "local.dead_letter_table") {
		t.Error("the shared dead-letter subscription must write local.dead_letter_table with write_metadata = true")
	}
	pub := root.resourcesOfType("google_pubsub_topic_iam_member")["shared_dead_letter_publisher"]
	if pub == nil || !refersTo(attrExpr(pub.Body, "member"), "local.pubsub_service_agent_member") {
		t.Error("the Pub/Sub service agent must publish to the shared dead-letter topic")
	}
	table := must(t, root.resources, "google_bigquery_table.dead_letters", "the root module must declare google_bigquery_table.dead_letters")
	pre := childBody(childBody(table.Body, "lifecycle"), "precondition")
	if pre == nil {
		t.Fatal("google_bigquery_table.dead_letters must carry the precondition on Pub/Sub's per-project limits")
	}
	cond := exprSourceOf(root, pre, "condition")
	for _, want := range []string{"length(var.sources)", "4999", "9999", "var.dead_letter_topic_per_source"} {
		if !strings.Contains(cond, want) {
			t.Errorf("the Pub/Sub limits precondition %q lacks %s", cond, want)
		}
	}
}
