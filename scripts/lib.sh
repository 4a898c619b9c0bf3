# shellcheck shell=bash
# Shared by deploy.sh, teardown.sh and smoke-test.sh, which source it: one
# home for their error exit, flag values, dry-run execution, the flags and
# checks of a deployment target, the Terraform commands on it and the
# registry settings. Not meant to be run.
#
# The caller sets SCRIPT (its name, for errors) before sourcing it.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# 1: print the commands instead of running them (--dry-run).
DRY_RUN=0

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

# parse_args ARGS...: reads the command line of deploy.sh and teardown.sh:
# the target flags (target_flag), --dry-run and -h/--help, and the script's
# own flags through its function script_flag, which sets SHIFT as
# target_flag does (0: not one of its flags). Anything else is refused.
parse_args() {
  while [[ $# -gt 0 ]]; do
    target_flag "$@"
    if [[ $SHIFT -eq 0 ]]; then
      script_flag "$@"
    fi
    if [[ $SHIFT -eq 0 ]]; then
      case "$1" in
        --dry-run) DRY_RUN=1; SHIFT=1 ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
      esac
    fi
    shift "$SHIFT"
  done
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

# need_tools TOOL...: refuses to go on without each tool; a dry run runs
# none of them.
need_tools() {
  if [[ $DRY_RUN -eq 1 ]]; then
    return 0
  fi
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || die "$tool is not installed"
  done
}

# terraform_target: after check_target, sets TF (terraform, run in TF_DIR;
# the caller is in ROOT) and TF_VARS (the variables of the target).
terraform_target() {
  TF=(terraform "-chdir=$TF_DIR")
  # shellcheck disable=SC2034 # used by the scripts that source this file
  TF_VARS=(
    "-var-file=$TFVARS"
    "-var=project_id=$PROJECT"
    "-var=region=$REGION"
    "-var=dataset_id=$DATASET"
    "-var=location=$LOCATION"
  )
}

# terraform_init: terraform init of TF_DIR; with --state-bucket the state is
# gs://STATE_BUCKET/STATE_PREFIX, through a backend_override.tf written into
# TF_DIR (a dry run only says so).
terraform_init() {
  local args=(-input=false)
  if [[ -n "$STATE_BUCKET" ]]; then
    step "using GCS state gs://$STATE_BUCKET/$STATE_PREFIX"
    if [[ $DRY_RUN -eq 1 ]]; then
      printf '+ write %q (terraform { backend "gcs" {} })\n' "$TF_DIR/backend_override.tf"
    else
      printf 'terraform {\n  backend "gcs" {}\n}\n' >"$TF_DIR/backend_override.tf"
    fi
    args+=("-backend-config=bucket=$STATE_BUCKET" "-backend-config=prefix=$STATE_PREFIX")
  fi
  step "terraform init ($TF_DIR)"
  run "${TF[@]}" init "${args[@]}"
}

# secret_value NAME OUTPUT: sets the variable NAME to the latest version of
# the secret whose id is the Terraform output OUTPUT (of TF), unless NAME is
# already set; a dry run prints the command and sets NAME to <NAME>.
secret_value() {
  local name="$1" output="$2" id
  if [[ -n "${!name:-}" ]]; then
    return 0
  fi
  if [[ $DRY_RUN -eq 1 ]]; then
    # shellcheck disable=SC2016 # printed, not expanded
    printf '+ %s=$(gcloud secrets versions access latest --project=%q --secret=$(terraform -chdir=%q output -raw %q))\n' \
      "$name" "$PROJECT" "$TF_DIR" "$output"
    printf -v "$name" '%s' "<$name>"
    return 0
  fi
  command -v gcloud >/dev/null || die "gcloud is needed to read the registry secrets (or set $name)"
  id="$("${TF[@]}" output -raw "$output")"
  printf -v "$name" '%s' "$(gcloud secrets versions access latest --project="$PROJECT" --secret="$id")"
}

# registry_settings: BQCDC_REGISTRY_URL, BQCDC_REGISTRY_USERNAME and
# BQCDC_REGISTRY_PASSWORD from the environment or else from the secrets the
# Terraform configuration names (secret_value), never printed; the user
# name and password are exported for bqcdc, the URL is passed as a flag.
registry_settings() {
  step "reading Schema Registry settings (values are not printed)"
  secret_value BQCDC_REGISTRY_URL registry_url_secret_id
  secret_value BQCDC_REGISTRY_USERNAME registry_username_secret_id
  secret_value BQCDC_REGISTRY_PASSWORD registry_password_secret_id
  export BQCDC_REGISTRY_USERNAME BQCDC_REGISTRY_PASSWORD
}
