# shellcheck shell=bash
# Shared by deploy.sh, teardown.sh and smoke-test.sh, which source it: one
# home for their error exit, flag values, dry-run execution and the flags
# and checks of a deployment target. Not meant to be run.
#
# The caller sets SCRIPT (its name, for errors) and DRY_RUN (1: print the
# commands instead of running them) before using these.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

die() {
  printf '%s: %s\n' "$SCRIPT" "$*" >&2
  exit 2
}

# value FLAG ARG: the argument of a flag, or an error if it is missing.
value() {
  [[ $# -ge 2 && -n "$2" && "$2" != --* ]] || die "$1 needs a value (see --help)"
  printf '%s' "$2"
}

# run CMD...: run a command, or print it (shell-quoted) in dry-run mode.
run() {
  if [[ $DRY_RUN -eq 1 ]]; then
    printf '+'
    printf ' %q' "$@"
    printf '\n'
  else
    "$@"
  fi
}

step() { printf '==> %s\n' "$*" >&2; }

# The deployment target of deploy.sh and teardown.sh, from the environment
# first; flags override.
PROJECT="${BQCDC_PROJECT:-}"
REGION="${BQCDC_REGION:-}"
DATASET="${BQCDC_DATASET:-}"
LOCATION="${BQCDC_LOCATION:-US}"
TFVARS="${BQCDC_TFVARS:-}"
TF_DIR="terraform/examples/demo"
STATE_BUCKET="${BQCDC_TF_STATE_BUCKET:-}"
STATE_PREFIX=""

# target_flag ARGS...: reads the first argument if it is a target flag
# (--project, --region, --dataset, --location, --tfvars, --tf-dir,
# --state-bucket, --state-prefix; as --flag value or --flag=value) and sets
# SHIFT to the number of arguments it took: 0 when it is not one.
target_flag() {
  SHIFT=0
  local name="${1%%=*}" val
  case "$name" in
    --project | --region | --dataset | --location | --tfvars | --tf-dir | --state-bucket | --state-prefix) ;;
    *) return 0 ;;
  esac
  if [[ "$1" == *=* ]]; then
    val="${1#*=}"
    SHIFT=1
  else
    val="$(value "$@")"
    SHIFT=2
  fi
  case "$name" in
    --project) PROJECT="$val" ;;
    --region) REGION="$val" ;;
    --dataset) DATASET="$val" ;;
    --location) LOCATION="$val" ;;
    --tfvars) TFVARS="$val" ;;
    --tf-dir) TF_DIR="$val" ;;
    --state-bucket) STATE_BUCKET="$val" ;;
    --state-prefix) STATE_PREFIX="$val" ;;
  esac
}

# require VAR --flag ...: refuses the flags whose variable is empty, naming
# them all.
require() {
  local missing=()
  while [[ $# -gt 0 ]]; do
    [[ -n "${!1}" ]] || missing+=("$2")
    shift 2
  done
  if [[ ${#missing[@]} -gt 0 ]]; then
    usage >&2
    die "missing required ${missing[*]}"
  fi
}

# check_project_region: refuses a --project or --region of the wrong shape.
check_project_region() {
  [[ "$PROJECT" =~ ^[a-z][a-z0-9-]{4,28}[a-z0-9]$ ]] || die "--project '$PROJECT' is not a project id"
  [[ "$REGION" =~ ^[a-z]+-[a-z]+[0-9]+$ ]] || die "--region '$REGION' is not a region such as europe-west1"
}

# check_target: refuses a target with a required flag missing (naming them
# all) or one of the wrong shape, and makes TFVARS absolute (terraform
# -chdir resolves -var-file against TF_DIR) and STATE_PREFIX defaulted.
check_target() {
  require PROJECT --project REGION --region DATASET --dataset TFVARS --tfvars
  check_project_region
  [[ "$DATASET" =~ ^[A-Za-z0-9_]+$ && ${#DATASET} -le 1024 ]] || die "--dataset '$DATASET' may contain only letters, digits and underscores"
  [[ -f "$TFVARS" ]] || die "--tfvars file '$TFVARS' does not exist"
  [[ -d "$ROOT/$TF_DIR" ]] || die "--tf-dir '$TF_DIR' is not a directory of the repository"
  TFVARS="$(cd "$(dirname "$TFVARS")" && pwd)/$(basename "$TFVARS")"
  STATE_PREFIX="${STATE_PREFIX:-bqcdc/$DATASET}"
}
