#!/usr/bin/env bash
# Tear down a bqcdc deployment made with scripts/deploy.sh (terraform destroy).
#
# The BigQuery dataset also holds the tables `bqcdc apply` and the compact
# function created (changelogs, snapshots, views, bookkeeping): Terraform does
# not manage them. By default this script keeps the dataset and its data: it
# removes the dataset and the pubsub_dead_letters table from the Terraform
# state (they stay in BigQuery) and destroys everything else. With
# --delete-data it deletes the dataset and every table in it.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/teardown.sh --project ID --region REGION --dataset DATASET --tfvars FILE [options]

Destroys a bqcdc deployment (terraform destroy), asking for confirmation.

Required (flag or environment variable):
  --project ID         Google Cloud project            (BQCDC_PROJECT)
  --region REGION      functions / scheduler region     (BQCDC_REGION)
  --dataset DATASET    BigQuery dataset                 (BQCDC_DATASET)
  --tfvars FILE        the variables file used to deploy (BQCDC_TFVARS)
Options:
  --location LOC       BigQuery location (default: US)  (BQCDC_LOCATION)
  --tf-dir DIR         Terraform root configuration (default: terraform/examples/demo)
  --module ADDRESS     address of the bqcdc module in that root (default: module.bqcdc)
  --state-bucket NAME  GCS bucket holding the state     (BQCDC_TF_STATE_BUCKET)
  --state-prefix PATH  object prefix of the state (default: bqcdc/<dataset>)
  --delete-data        also delete the dataset and ALL tables in it (changelogs,
                       snapshots, views created by `bqcdc apply`); default: keep them
  --yes                do not ask for confirmation
  --dry-run            print every command instead of running it
  -h, --help           show this help
EOF
}

SCRIPT=teardown.sh
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
MODULE="module.bqcdc"
DELETE_DATA=0
YES=0

# script_flag ARGS...: teardown.sh's own flags (see parse_args in lib.sh).
script_flag() {
  SHIFT=1
  case "$1" in
    --module) MODULE="$(value "$@")"; SHIFT=2 ;;
    --module=*) MODULE="${1#*=}" ;;
    --delete-data) DELETE_DATA=1 ;;
    --yes) YES=1 ;;
    *) SHIFT=0 ;;
  esac
}

parse_args "$@"
check_target
[[ "$MODULE" =~ ^module\.[A-Za-z0-9_-]+$ ]] || die "--module '$MODULE' is not a module address such as module.bqcdc"
need_tools terraform

if [[ $DELETE_DATA -eq 1 ]]; then
  what="EVERYTHING, including dataset $PROJECT:$DATASET and all its tables (changelogs, snapshots, views)"
else
  what="the functions, topics, subscriptions, scheduler job, service accounts and bucket; dataset $PROJECT:$DATASET and its tables are kept"
fi
if [[ $YES -eq 0 ]]; then
  if [[ $DRY_RUN -eq 1 ]]; then
    step "would ask for confirmation to destroy $what"
  else
    [[ -t 0 ]] || die "not a terminal: pass --yes to confirm"
    printf 'This destroys %s.\nType the project id (%s) to continue: ' "$what" "$PROJECT" >&2
    read -r answer
    [[ "$answer" == "$PROJECT" ]] || die "aborted"
  fi
fi

cd "$ROOT"
terraform_target
DATA_ADDRESSES=("$MODULE.module.dataset" "$MODULE.google_bigquery_table.dead_letters")
terraform_init

if [[ $DELETE_DATA -eq 1 ]]; then
  # The flags must be in the state before destroy honours them.
  DATA_VARS=("-var=delete_contents_on_destroy=true" "-var=deletion_protection=false")
  step "allowing the dataset and dead-letter table to be deleted"
  run "${TF[@]}" apply -input=false -auto-approve "${TF_VARS[@]}" "${DATA_VARS[@]}" \
    "-target=${DATA_ADDRESSES[0]}" "-target=${DATA_ADDRESSES[1]}"
  step "terraform destroy (all resources and data)"
  run "${TF[@]}" destroy -input=false -auto-approve "${TF_VARS[@]}" "${DATA_VARS[@]}"
else
  step "keeping the dataset: removing it and the dead-letter table from the Terraform state"
  if [[ $DRY_RUN -eq 1 ]]; then
    run "${TF[@]}" state rm "${DATA_ADDRESSES[@]}"
  else
    in_state=()
    while IFS= read -r address; do
      for keep in "${DATA_ADDRESSES[@]}"; do
        if [[ "$address" == "$keep" || "$address" == "$keep".* ]]; then
          in_state+=("$keep")
        fi
      done
    done < <("${TF[@]}" state list)
    if [[ ${#in_state[@]} -gt 0 ]]; then
      mapfile -t in_state < <(printf '%s\n' "${in_state[@]}" | sort -u)
      run "${TF[@]}" state rm "${in_state[@]}"
    fi
  fi
  step "terraform destroy (everything else)"
  run "${TF[@]}" destroy -input=false -auto-approve "${TF_VARS[@]}"
  cat >&2 <<EOF
==> Kept dataset $PROJECT:$DATASET with its tables (changelogs, snapshots, views,
    pubsub_dead_letters). It is no longer managed by Terraform. To manage it again
    after a new deploy, import it first:
      terraform -chdir=$TF_DIR import $MODULE.module.dataset.google_bigquery_dataset.main projects/$PROJECT/datasets/$DATASET
      terraform -chdir=$TF_DIR import $MODULE.google_bigquery_table.dead_letters projects/$PROJECT/datasets/$DATASET/tables/pubsub_dead_letters
    To delete it instead: bq rm -r -f -d $PROJECT:$DATASET
EOF
fi
step "done"
