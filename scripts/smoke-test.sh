#!/usr/bin/env bash
# Smoke test of a whole bqcdc deployment in a scratch Google Cloud project:
# terraform apply of terraform/examples/demo with a synthetic load's sources,
# bqcdc apply, bqcdc loadgen publishing to the real topics and waiting until
# every message landed, every view checked against the reference model,
# bqcdc compact, bqcdc status (exit 0), then terraform destroy (also on
# failure, unless --keep) and a summary of what it created, measured and cost.
#
# It is how a user checks a new region, project or bqcdc version. It has not
# been run against Google Cloud from the machines bqcdc is developed on (they
# have no cloud credentials); `--dry-run` prints the plan without any.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/smoke-test.sh --project ID --region REGION [options]

Deploys bqcdc into a scratch project, pushes a synthetic load through it,
checks it, and destroys it again. Everything it creates is named after one
run id (dataset bqcdc_smoke_<run>, topics smoke<run>.db.tNNN).

Required (flag or environment variable):
  --project ID         scratch Google Cloud project      (BQCDC_PROJECT)
  --region REGION      functions / scheduler region      (BQCDC_REGION)
Options:
  --location LOC       BigQuery location (default: US)   (BQCDC_LOCATION)
  --tfvars FILE        variables with the Secret Manager secret ids of the
                       Schema Registry and the replay key
                       (default: terraform/examples/demo/terraform.tfvars)
  --tables N           synthetic source tables (default: 2)
  --messages N         messages per table (default: 500)
  --keys N             distinct keys per table (default: 100)
  --rate R             messages per second over all tables (default: 0, a burst)
  --wait DURATION      how long to wait for every message to land (default: 10m)
  --price-per-tib USD  on-demand query price used for the cost estimate (default: 6.25)
  --keep               do not destroy anything at the end (prints how to)
  --dry-run            print the plan and every command; needs no credentials
  -h, --help           show this help

Needs terraform, go, and gcloud (to read the registry secrets unless
BQCDC_REGISTRY_URL / BQCDC_REGISTRY_USERNAME / BQCDC_REGISTRY_PASSWORD are
set); bq (optional) for the cost. The secrets must exist first
(terraform/README.md, "Registry secrets"), and the registry must be
reachable from Cloud Run and from this machine.
EOF
}

SCRIPT=smoke-test.sh
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TFVARS="terraform/examples/demo/terraform.tfvars"
TABLES=2
MESSAGES=500
KEYS=100
RATE=0
WAIT=10m
PRICE_PER_TIB=6.25
KEEP=0

while [[ $# -gt 0 ]]; do
  case "$1" in
    --project) PROJECT="$(value "$@")"; shift 2 ;;
    --region) REGION="$(value "$@")"; shift 2 ;;
    --location) LOCATION="$(value "$@")"; shift 2 ;;
    --tfvars) TFVARS="$(value "$@")"; shift 2 ;;
    --tables) TABLES="$(value "$@")"; shift 2 ;;
    --messages) MESSAGES="$(value "$@")"; shift 2 ;;
    --keys) KEYS="$(value "$@")"; shift 2 ;;
    --rate) RATE="$(value "$@")"; shift 2 ;;
    --wait) WAIT="$(value "$@")"; shift 2 ;;
    --price-per-tib) PRICE_PER_TIB="$(value "$@")"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --dry-run) DRY_RUN=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done

require PROJECT --project REGION --region
check_project_region
[[ "$LOCATION" =~ ^[A-Za-z0-9-]+$ ]] || die "--location '$LOCATION' is not a BigQuery location"
for n in TABLES MESSAGES KEYS; do
  [[ "${!n}" =~ ^[0-9]+$ ]] || die "--${n,,} '${!n}' is not a number"
done
[[ "$RATE" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--rate '$RATE' is not a number"
[[ "$PRICE_PER_TIB" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--price-per-tib '$PRICE_PER_TIB' is not a number"
[[ "$WAIT" =~ ^[0-9]+(s|m|h)$ ]] || die "--wait '$WAIT' is not a duration such as 10m"
cd "$ROOT"
[[ -f "$TFVARS" ]] || die "--tfvars file '$TFVARS' does not exist"
TFVARS="$(cd "$(dirname "$TFVARS")" && pwd)/$(basename "$TFVARS")"

need_tools terraform go

RUN_ID="$(date -u +%Y%m%d%H%M%S)"
DATASET="bqcdc_smoke_$RUN_ID"
PREFIX="smoke$RUN_ID.db"
WORKSPACE="smoke-$RUN_ID"
TF_DIR="terraform/examples/demo"
if [[ $DRY_RUN -eq 1 ]]; then
  WORK="${TMPDIR:-/tmp}/bqcdc-smoke.DRYRUN" # printed, never created
else
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/bqcdc-smoke.XXXXXX")"
fi
BQCDC="$WORK/bqcdc"
# Terraform's working data (providers, the selected workspace) goes to the
# run's folder, and its state to workspace smoke-<run>: a deployment of the
# demo from the same checkout is not touched.
export TF_DATA_DIR="$WORK/terraform-data"
TF=(terraform "-chdir=$TF_DIR")
TF_VARS=(
  "-var-file=$TFVARS"
  "-var-file=$WORK/smoke.tfvars.json"
  "-var=project_id=$PROJECT"
  "-var=region=$REGION"
  "-var=location=$LOCATION"
)
LOAD=(--prefix "$PREFIX" --tables "$TABLES" --messages "$MESSAGES" --keys "$KEYS")
TARGET=(--project "$PROJECT" --dataset "$DATASET" --location "$LOCATION")

step() { printf '\n==> %s\n' "$*" >&2; } # a blank line between the steps of a long run

if [[ $DRY_RUN -eq 1 ]]; then
  cat <<EOF
Plan of the smoke test (run $RUN_ID; nothing below runs with --dry-run):
  1. build bqcdc; write the synthetic load's flows and Avro schemas ($TABLES tables)
  2. terraform apply of $TF_DIR in workspace $WORKSPACE: dataset $DATASET, one
     topic, push subscription and dead-letter path per load table, both functions,
     the scheduler job, service accounts and grants (proves: the modules against
     the real provider and APIs, IAM, the function build from the repository root)
  3. bqcdc apply of the load's flows (proves: changelog tables, state tables and
     views created through the real API; table functions where the flows have them)
  4. bqcdc loadgen publishes $TABLES x $MESSAGES messages to the real topics and waits
     until every one landed (proves: push delivery, OIDC, the registry from Cloud
     Run, the Storage Write default stream), then --check compares every view with
     the reference model; measures landed msg/s and publish->append p50/p99
  5. bqcdc compact --json (proves: compaction jobs on real BigQuery; measures jobs
     and bytes billed)
  6. bqcdc status --max-dead-letters 0 --max-compaction-age 30m (must exit 0)
  7. cost: bytes billed by every job of the run (INFORMATION_SCHEMA.JOBS_BY_PROJECT,
     with bq), at \$$PRICE_PER_TIB/TiB
  8. terraform destroy of everything in the workspace, also after a failure$([[ $KEEP -eq 1 ]] && printf ' -- skipped: --keep')
Not covered here (see the live suite, internal/dev/e2e/realbq): calling the
table functions, compact --dry-run (not built yet), the dead-letter path, replay.

EOF
fi

# cleanup runs at exit, success or not: destroy unless --keep, then summary.
STARTED=0
APPLIED=0
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [[ $DRY_RUN -eq 1 || $STARTED -eq 0 ]]; then
    exit "$rc"
  fi
  if [[ $APPLIED -eq 1 ]]; then
    if [[ $KEEP -eq 1 ]]; then
      step "kept for inspection (--keep); destroy it with:"
      printf '  TF_DATA_DIR=%q terraform -chdir=%q workspace select %q\n' "$TF_DATA_DIR" "$TF_DIR" "$WORKSPACE" >&2
      printf '  TF_DATA_DIR=%q terraform -chdir=%q destroy' "$TF_DATA_DIR" "$TF_DIR" >&2
      printf ' %q' "${TF_VARS[@]}" >&2
      printf '\n' >&2
    else
      step "terraform destroy (workspace $WORKSPACE)"
      if "${TF[@]}" destroy -input=false -auto-approve "${TF_VARS[@]}" >"$WORK/destroy.log" 2>&1; then
        "${TF[@]}" workspace select default >/dev/null && "${TF[@]}" workspace delete "$WORKSPACE" >/dev/null || true
        echo "destroyed everything the run created" >&2
      else
        tail -20 "$WORK/destroy.log" >&2
        echo "DESTROY FAILED: state and log are in $WORK; rerun terraform destroy from there" >&2
        rc=1
      fi
    fi
  fi
  summary "$rc"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# summary prints what the run created, measured and cost.
summary() {
  local rc="$1"
  {
    printf '\n==== smoke test %s: %s ====\n' "$RUN_ID" "$([[ $rc -eq 0 ]] && echo PASSED || echo FAILED)"
    printf 'project %s, region %s, location %s, dataset %s, work dir %s\n' "$PROJECT" "$REGION" "$LOCATION" "$DATASET" "$WORK"
    if [[ -s "$WORK/created.txt" ]]; then
      printf 'created (terraform resources by type):\n'
      sed 's/^/  /' "$WORK/created.txt"
    fi
    [[ -s "$WORK/apply.txt" ]] && printf 'bqcdc apply: %s objects\n' "$(wc -l <"$WORK/apply.txt")"
    if [[ -s "$WORK/loadgen.json" ]]; then
      local j
      j="$(tr -d '\n ' <"$WORK/loadgen.json")"
      field() { printf '%s' "$j" | grep -o "\"$1\":[^,}]*" | cut -d: -f2; }
      printf 'load: %s published, %s landed, %s dead-lettered; %.0f msg/s landed; publish->append p50 %d ms, p99 %d ms\n' \
        "$(field published)" "$(field landed)" "$(field dead_lettered)" "$(field msgs_per_s)" \
        "$(($(field p50_ns) / 1000000))" "$(($(field p99_ns) / 1000000))"
    fi
    if [[ -s "$WORK/compact.json" ]]; then
      printf 'compaction: %s\n' "$(grep -o '"jobs":[0-9]*\|"bytes_billed":[0-9]*' "$WORK/compact.json" | awk -F: '$1=="\"jobs\"" {j+=$2} $1=="\"bytes_billed\"" {b+=$2} END {printf "%d flows, %d jobs, %d bytes billed", NR/2, j, b}')"
    fi
    [[ -s "$WORK/cost.txt" ]] && cat "$WORK/cost.txt"
    printf 'logs: %s\n' "$WORK"
  } | tee -a "$WORK/summary.txt" >&2
}

STARTED=1
START_EPOCH="$(date -u +%s)"

step "1. build bqcdc and write the load's flows and schemas"
run go build -o "$BQCDC" ./cmd/bqcdc
run "$BQCDC" loadgen --write "$WORK/load" "${LOAD[@]}"
# The sources Terraform deploys are the load's topics, in a dataset of the
# run's own that destroy may delete with everything bqcdc apply put in it.
if [[ $DRY_RUN -eq 1 ]]; then
  printf '+ write %s (sources: the %s load topics %s.t000...; dataset_id %s; delete_contents_on_destroy, no deletion_protection)\n' \
    "$WORK/smoke.tfvars.json" "$TABLES" "$PREFIX" "$DATASET"
else
  {
    printf '{\n  "dataset_id": "%s",\n  "delete_contents_on_destroy": true,\n  "deletion_protection": false,\n  "sources": {\n' "$DATASET"
    for ((i = 0; i < TABLES; i++)); do
      printf '    "%s.t%03d": {}%s\n' "$PREFIX" "$i" "$([[ $i -lt $((TABLES - 1)) ]] && echo ,)"
    done
    printf '  }\n}\n'
  } >"$WORK/smoke.tfvars.json"
fi

step "2. terraform apply (workspace $WORKSPACE)"
run "${TF[@]}" init -input=false
run "${TF[@]}" workspace new "$WORKSPACE"
APPLIED=1 # from here on, destroy at exit: apply may fail half-way
run "${TF[@]}" apply -input=false -auto-approve "${TF_VARS[@]}"
if [[ $DRY_RUN -eq 0 ]]; then
  "${TF[@]}" state list | sed -E 's/\[[^]]*\]//g' | awk -F. '{print $(NF-1)}' | sort | uniq -c >"$WORK/created.txt"
fi

registry_settings
REGISTRY=(--registry-url "$BQCDC_REGISTRY_URL")
if [[ $DRY_RUN -eq 1 ]]; then
  REGISTRY=(--registry-url '<BQCDC_REGISTRY_URL>')
fi

step "3. bqcdc apply (the load's flows into $DATASET)"
if [[ $DRY_RUN -eq 1 ]]; then
  run "$BQCDC" apply "${TARGET[@]}" --flows "$WORK/load/flows" --schemas "$WORK/load/schemas" "${REGISTRY[@]}" \
    --dead-letter-retention-days '<terraform output dead_letter_retention_days>'
else
  "$BQCDC" apply "${TARGET[@]}" --flows "$WORK/load/flows" --schemas "$WORK/load/schemas" "${REGISTRY[@]}" \
    --dead-letter-retention-days "$("${TF[@]}" output -raw dead_letter_retention_days)" | tee "$WORK/apply.txt"
fi

step "4. bqcdc loadgen: publish to the real topics, wait until every message landed, check every view"
if [[ $DRY_RUN -eq 1 ]]; then
  run "$BQCDC" loadgen "${TARGET[@]}" "${REGISTRY[@]}" "${LOAD[@]}" --rate "$RATE" --wait "$WAIT" --check --json
else
  "$BQCDC" loadgen "${TARGET[@]}" "${REGISTRY[@]}" "${LOAD[@]}" --rate "$RATE" --wait "$WAIT" --check --json >"$WORK/loadgen.json" ||
    { cat "$WORK/loadgen.json" >&2; exit 1; }
  cat "$WORK/loadgen.json"
fi

step "5. bqcdc compact"
if [[ $DRY_RUN -eq 1 ]]; then
  run "$BQCDC" compact "${TARGET[@]}" --flows "$WORK/load/flows" --json
else
  "$BQCDC" compact "${TARGET[@]}" --flows "$WORK/load/flows" --json >"$WORK/compact.json" || { cat "$WORK/compact.json" >&2; exit 1; }
fi

step "6. bqcdc status (must exit 0)"
if [[ $DRY_RUN -eq 1 ]]; then
  run "$BQCDC" status "${TARGET[@]}" --flows "$WORK/load/flows" --max-dead-letters 0 --max-compaction-age 30m
else
  "$BQCDC" status "${TARGET[@]}" --flows "$WORK/load/flows" --max-dead-letters 0 --max-compaction-age 30m | tee "$WORK/status.txt"
fi

step "7. cost of the run's BigQuery jobs"
COST_SQL="SELECT COUNT(*) AS jobs, IFNULL(SUM(total_bytes_billed), 0) AS bytes_billed
FROM \`$PROJECT\`.\`region-${LOCATION,,}\`.INFORMATION_SCHEMA.JOBS_BY_PROJECT
WHERE creation_time >= TIMESTAMP_SECONDS($START_EPOCH)"
if [[ $DRY_RUN -eq 1 ]]; then
  run bq query --project_id="$PROJECT" --location="$LOCATION" --use_legacy_sql=false --format=csv "$COST_SQL"
elif command -v bq >/dev/null &&
  bq query --project_id="$PROJECT" --location="$LOCATION" --use_legacy_sql=false --format=csv --quiet "$COST_SQL" >"$WORK/cost.csv" 2>"$WORK/cost.err"; then
  tail -1 "$WORK/cost.csv" | awk -F, -v p="$PRICE_PER_TIB" '{printf "cost: %d BigQuery jobs billed %d bytes = about $%.4f at $%s/TiB on demand (Pub/Sub, Storage Write, functions: within free tiers at this size, not measured)\n", $1, $2, $2 / 1099511627776 * p, p}' >"$WORK/cost.txt"
else
  echo "cost: not read (needs bq and bigquery.jobs.listAll on the project; see $WORK/cost.err); the compaction line above is the bulk of it" >"$WORK/cost.txt"
fi

if [[ $DRY_RUN -eq 1 ]]; then
  if [[ $KEEP -eq 1 ]]; then
    step "8. kept for inspection (--keep): nothing is destroyed"
  else
    step "8. terraform destroy (at exit, also after a failure)"
    run "${TF[@]}" destroy -input=false -auto-approve "${TF_VARS[@]}"
    run "${TF[@]}" workspace select default
    run "${TF[@]}" workspace delete "$WORKSPACE"
  fi
fi
