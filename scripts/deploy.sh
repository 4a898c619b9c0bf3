#!/usr/bin/env bash
# Deploy bqcdc to Google Cloud: `terraform init` + `terraform apply` of a root
# configuration (terraform/examples/demo by default), then `bqcdc apply` to
# create or update the changelog tables and views in the dataset.
#
# Registry credentials for `bqcdc apply` are taken from BQCDC_REGISTRY_URL,
# BQCDC_REGISTRY_USERNAME and BQCDC_REGISTRY_PASSWORD when set, otherwise read
# from the Secret Manager secrets the Terraform configuration names. They are
# never printed.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/deploy.sh --project ID --region REGION --dataset DATASET --tfvars FILE [options]

Deploys bqcdc: terraform init/apply, then `go run ./cmd/bqcdc apply`.

Required (flag or environment variable):
  --project ID         Google Cloud project            (BQCDC_PROJECT)
  --region REGION      functions / scheduler region     (BQCDC_REGION)
  --dataset DATASET    BigQuery dataset                 (BQCDC_DATASET)
  --tfvars FILE        Terraform variables file, e.g. terraform/examples/demo/terraform.tfvars
                                                        (BQCDC_TFVARS)
Options:
  --location LOC       BigQuery location (default: US)  (BQCDC_LOCATION)
  --tf-dir DIR         Terraform root configuration (default: terraform/examples/demo)
  --state-bucket NAME  keep Terraform state in this GCS bucket (writes backend_override.tf)
                                                        (BQCDC_TF_STATE_BUCKET)
  --state-prefix PATH  object prefix of the state (default: bqcdc/<dataset>)
  --auto-approve       do not ask before terraform apply
  --skip-tables        stop after terraform apply (no `bqcdc apply`)
  --dry-run            print every command instead of running it
  -h, --help           show this help
EOF
}

SCRIPT=deploy.sh
DRY_RUN=0
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
AUTO_APPROVE=0
SKIP_TABLES=0

while [[ $# -gt 0 ]]; do
  target_flag "$@"
  if [[ $SHIFT -gt 0 ]]; then
    shift "$SHIFT"
    continue
  fi
  case "$1" in
    --auto-approve) AUTO_APPROVE=1; shift ;;
    --skip-tables) SKIP_TABLES=1; shift ;;
    --dry-run) DRY_RUN=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
check_target

if [[ $DRY_RUN -eq 0 ]]; then
  for tool in terraform go; do
    command -v "$tool" >/dev/null || die "$tool is not installed"
  done
fi

cd "$ROOT"
TF=(terraform "-chdir=$TF_DIR")
TF_VARS=(
  "-var-file=$TFVARS"
  "-var=project_id=$PROJECT"
  "-var=region=$REGION"
  "-var=dataset_id=$DATASET"
  "-var=location=$LOCATION"
)

init_args=(-input=false)
if [[ -n "$STATE_BUCKET" ]]; then
  step "using GCS state gs://$STATE_BUCKET/$STATE_PREFIX"
  if [[ $DRY_RUN -eq 1 ]]; then
    printf '+ write %q (terraform { backend "gcs" {} })\n' "$TF_DIR/backend_override.tf"
  else
    printf 'terraform {\n  backend "gcs" {}\n}\n' >"$TF_DIR/backend_override.tf"
  fi
  init_args+=("-backend-config=bucket=$STATE_BUCKET" "-backend-config=prefix=$STATE_PREFIX")
fi

step "terraform init ($TF_DIR)"
run "${TF[@]}" init "${init_args[@]}"

apply_args=(-input=false)
[[ $AUTO_APPROVE -eq 1 ]] && apply_args+=(-auto-approve)
step "terraform apply"
run "${TF[@]}" apply "${apply_args[@]}" "${TF_VARS[@]}"

if [[ $SKIP_TABLES -eq 1 ]]; then
  step "skipping bqcdc apply (--skip-tables)"
  exit 0
fi

# secret_value NAME OUTPUT: the latest version of the secret whose id is the
# Terraform output OUTPUT, unless the variable NAME is already set.
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
  id="$("${TF[@]}" output -raw "$output")"
  printf -v "$name" '%s' "$(gcloud secrets versions access latest --project="$PROJECT" --secret="$id")"
}

step "reading Schema Registry settings (values are not printed)"
if [[ $DRY_RUN -eq 0 ]] && [[ -z "${BQCDC_REGISTRY_URL:-}${BQCDC_REGISTRY_USERNAME:-}${BQCDC_REGISTRY_PASSWORD:-}" ]]; then
  command -v gcloud >/dev/null || die "gcloud is needed to read the registry secrets (or set BQCDC_REGISTRY_URL, BQCDC_REGISTRY_USERNAME, BQCDC_REGISTRY_PASSWORD)"
fi
secret_value BQCDC_REGISTRY_URL registry_url_secret_id
secret_value BQCDC_REGISTRY_USERNAME registry_username_secret_id
secret_value BQCDC_REGISTRY_PASSWORD registry_password_secret_id
export BQCDC_REGISTRY_USERNAME BQCDC_REGISTRY_PASSWORD

# The dead-letter table's partition expiration (Terraform's
# dead_letter_retention_days; 0 keeps dead letters): bqcdc apply owns that
# table, Terraform only the setting.
step "bqcdc apply (changelog tables and views in $PROJECT:$DATASET)"
if [[ $DRY_RUN -eq 1 ]]; then
  run go run ./cmd/bqcdc apply --project "$PROJECT" --dataset "$DATASET" --location "$LOCATION" \
    --flows sql/flows --schemas schemas --registry-url '<BQCDC_REGISTRY_URL>' \
    --dead-letter-retention-days '<terraform output dead_letter_retention_days>'
else
  retention="$("${TF[@]}" output -raw dead_letter_retention_days)"
  go run ./cmd/bqcdc apply --project "$PROJECT" --dataset "$DATASET" --location "$LOCATION" \
    --flows sql/flows --schemas schemas --registry-url "$BQCDC_REGISTRY_URL" \
    --dead-letter-retention-days "$retention"
fi
step "done"
