# Operating bqcdc from Cloud Monitoring: the metric descriptors of what the
# functions export (internal/metrics), a dashboard, and alert policies for
# the things that go wrong (docs/operating.md, Runbook): dead letters, compaction
# failing or not running, a source's freshness, push backlog, function
# errors. monitoring_test.go checks that every metric named here is one the
# code emits, with the kind, type, unit and labels it emits.

locals {
  monitoring = var.monitoring
  alerts_on  = local.monitoring.alerts && local.monitoring.export_metrics
  channels = concat(var.notification_channels,
  [for c in google_monitoring_notification_channel.email : c.id])

  # One entry per instrument of internal/metrics (Instruments): Cloud
  # Monitoring metric kind, value type, unit and the attribute keys (the
  # exporter adds service_name). The type is workload.googleapis.com/<key>.
  metrics = {
    "bqcdc.ingest.messages"                  = { kind = "CUMULATIVE", value = "INT64", unit = "{message}", labels = ["outcome", "stage", "topic"], description = "Pub/Sub messages the ingest function finished, by topic and outcome (appended, tombstone, dead_lettered, retried) and, for the last two, the failing stage." }
    "bqcdc.ingest.lag"                       = { kind = "CUMULATIVE", value = "DISTRIBUTION", unit = "s", labels = ["topic"], description = "From the message's Pub/Sub publish time to its changelog append acknowledged, by topic." }
    "bqcdc.ingest.decode_time"               = { kind = "CUMULATIVE", value = "DISTRIBUTION", unit = "s", labels = ["path"], description = "From a message's payload to its changelog row's bytes (decode, flatten, convert, encode), by path (always compiled: the one row path)." }
    "bqcdc.append.duration"                  = { kind = "CUMULATIVE", value = "DISTRIBUTION", unit = "s", labels = ["outcome"], description = "One Storage Write AppendRows call (a batch of rows), by outcome: ok, refused (rows BigQuery refused), error (retried)." }
    "bqcdc.append.rows"                      = { kind = "CUMULATIVE", value = "DISTRIBUTION", unit = "{row}", labels = [], description = "Rows one AppendRows call carried: the rows of concurrent requests batched together." }
    "bqcdc.compaction.runs"                  = { kind = "CUMULATIVE", value = "INT64", unit = "{run}", labels = ["flow", "outcome"], description = "Compaction runs of each flow, by outcome: compacted, up to date, idle, deferred, settling, failed." }
    "bqcdc.compaction.duration"              = { kind = "CUMULATIVE", value = "DISTRIBUTION", unit = "s", labels = ["flow", "outcome"], description = "Run time of one flow's compaction, by flow and outcome." }
    "bqcdc.compaction.events"                = { kind = "CUMULATIVE", value = "INT64", unit = "{event}", labels = ["flow"], description = "Changelog rows compaction read after each flow's previous watermark." }
    "bqcdc.compaction.jobs"                  = { kind = "CUMULATIVE", value = "INT64", unit = "{job}", labels = ["flow"], description = "BigQuery query jobs compaction started, by flow (0 for an idle flow)." }
    "bqcdc.compaction.bytes_billed"          = { kind = "CUMULATIVE", value = "INT64", unit = "By", labels = ["flow"], description = "Bytes BigQuery billed for compaction's query jobs, by flow." }
    "bqcdc.compaction.unfolded_age"          = { kind = "GAUGE", value = "DOUBLE", unit = "s", labels = ["flow"], description = "After each run of a flow: how long changes may have waited to be folded (0 when nothing waits; else how far its watermark trails the clock)." }
    "bqcdc.compaction.snapshot_rows_skipped" = { kind = "GAUGE", value = "INT64", unit = "{row}", labels = ["flow"], description = "Snapshot flows, after each run that read the table: its rows never applied (a snapshot loaded with a version at or before one already applied, or a NULL version)." }
    "bqcdc.compaction.gold_age"              = { kind = "GAUGE", value = "DOUBLE", unit = "s", labels = ["view"], description = "After each run of a flow, for each materialized view over it that compaction refreshes: how far the position its <view>_refreshed holds trails the clock." }
  }

  ingest_subscriptions = "resource.type = \"pubsub_subscription\" AND resource.label.subscription_id = ends_with(\".bqcdc-ingest\")"
  runbook              = "See the Runbook in docs/operating.md of bqcdc; `bqcdc status --project ${var.project_id} --dataset ${var.dataset_id}` shows every flow's freshness, tail, compaction and dead letters."
}

resource "google_monitoring_metric_descriptor" "bqcdc" {
  for_each = local.monitoring.export_metrics ? local.metrics : {}

  project      = var.project_id
  type         = "workload.googleapis.com/${each.key}"
  display_name = each.key
  description  = each.value.description
  metric_kind  = each.value.kind
  value_type   = each.value.value
  unit         = each.value.unit

  labels {
    key         = "service_name"
    value_type  = "STRING"
    description = "The function (bqcdc-ingest, bqcdc-compact)."
  }

  dynamic "labels" {
    for_each = each.value.labels
    content {
      key        = labels.value
      value_type = "STRING"
    }
  }
}

# Writing metrics needs monitoring.timeSeries.create, granted at project
# level only.
resource "google_project_iam_member" "ingest_metric_writer" {
  count   = local.monitoring.export_metrics ? 1 : 0
  project = var.project_id
  role    = "roles/monitoring.metricWriter"
  member  = "serviceAccount:${google_service_account.ingest.email}"
}

resource "google_project_iam_member" "compact_metric_writer" {
  count   = local.monitoring.export_metrics ? 1 : 0
  project = var.project_id
  role    = "roles/monitoring.metricWriter"
  member  = "serviceAccount:${google_service_account.compact.email}"
}

resource "google_monitoring_notification_channel" "email" {
  for_each = toset(local.monitoring.email_addresses)

  project      = var.project_id
  display_name = "bqcdc alerts: ${each.value}"
  type         = "email"
  labels       = { email_address = each.value }
  user_labels  = local.labels
}

# --- Alert policies ---------------------------------------------------------

locals {
  # The deployment's alert policies but the per-source freshness ones
  # (below), by name: whether the policy exists, its display name, its
  # conditions and its documentation. Those on bqcdc's own metrics exist only
  # with alerts and export_metrics on (local.alerts_on), those on Google's
  # metrics with alerts on. A condition fires when its filter's series,
  # aggregated over period by aligner, then reducer across series grouped by
  # group_by (null: none), stays above threshold for duration; threshold =
  # null makes it a condition_absent, firing when no series arrives for
  # duration.
  alert_policies = {
    # A message could never become a changelog row (ingest wrote it to
    # _bqcdc_dead_letters), or Pub/Sub gave up delivering it
    # (pubsub_dead_letters).
    dead_letters = {
      enabled      = local.alerts_on
      display_name = "bqcdc: messages dead-lettered"
      conditions = [
        { display_name = "ingest dead-lettered messages (by topic and stage)", filter = "metric.type = \"workload.googleapis.com/bqcdc.ingest.messages\" AND metric.label.outcome = \"dead_lettered\" AND resource.type = \"generic_task\"", threshold = 0, duration = "0s", period = "300s", aligner = "ALIGN_DELTA", reducer = "REDUCE_SUM", group_by = ["metric.label.topic", "metric.label.stage"] },
        { display_name = "Pub/Sub gave up delivering messages", filter = "metric.type = \"pubsub.googleapis.com/subscription/dead_letter_message_count\" AND ${local.ingest_subscriptions}", threshold = 0, duration = "0s", period = "300s", aligner = "ALIGN_DELTA", reducer = "REDUCE_SUM", group_by = ["resource.label.subscription_id"] },
      ]
      documentation = "A message was dead-lettered. `bqcdc status` lists the last day's dead letters by stage and reason; fix the cause, then `bqcdc replay`. ${local.runbook}"
    }

    # A flow's compaction failed, or compaction stopped: no run reported, or a
    # flow's watermark fell behind.
    compaction = {
      enabled      = local.alerts_on
      display_name = "bqcdc: compaction failing or not running"
      conditions = [
        { display_name = "a flow's compaction failed", filter = "metric.type = \"workload.googleapis.com/bqcdc.compaction.runs\" AND metric.label.outcome = \"failed\" AND resource.type = \"generic_task\"", threshold = 0, duration = "0s", period = "600s", aligner = "ALIGN_DELTA", reducer = "REDUCE_SUM", group_by = ["metric.label.flow"] },
        { display_name = "no compaction run reported", filter = "metric.type = \"workload.googleapis.com/bqcdc.compaction.runs\" AND resource.type = \"generic_task\"", threshold = null, duration = "${local.monitoring.compaction_absent_seconds}s", period = "600s", aligner = "ALIGN_DELTA", reducer = "REDUCE_SUM", group_by = null },
        { display_name = "a flow's changes wait to be folded", filter = "metric.type = \"workload.googleapis.com/bqcdc.compaction.unfolded_age\" AND resource.type = \"generic_task\"", threshold = local.monitoring.unfolded_age_seconds, duration = "0s", period = "600s", aligner = "ALIGN_MIN", reducer = "REDUCE_MIN", group_by = ["metric.label.flow"] },
        # Rows a snapshot flow will never apply: a snapshot loaded with a version
        # at or before one already applied (or a NULL version). The gauge falls
        # back to 0 once those rows are deleted from the table.
        { display_name = "a snapshot flow's table holds rows never applied", filter = "metric.type = \"workload.googleapis.com/bqcdc.compaction.snapshot_rows_skipped\" AND resource.type = \"generic_task\"", threshold = 0, duration = "0s", period = "600s", aligner = "ALIGN_MAX", reducer = "REDUCE_MAX", group_by = ["metric.label.flow"] },
      ]
      documentation = "Compaction failed or stopped, or a snapshot flow skipped rows. Views stay correct (they fold the tail) but read more as the tail grows. Look at the compact function's logs (event=compaction, outcome=failed) and `_bqcdc_compaction_state`. Skipped snapshot rows (`snapshot_rows_skipped`) belong to a snapshot loaded after a newer one was applied: load it again with a newer version, and delete the late rows. ${local.runbook}"
    }

    # Any bqcdc push or dead-letter subscription holds a message older than the
    # threshold (one policy for all; per-source freshness is below).
    backlog = {
      enabled      = local.monitoring.alerts
      display_name = "bqcdc: push subscription backlog"
      conditions = [
        { display_name = "oldest unacknowledged message", filter = "metric.type = \"pubsub.googleapis.com/subscription/oldest_unacked_message_age\" AND ${local.ingest_subscriptions}", threshold = local.monitoring.backlog_age_seconds, duration = "300s", period = "60s", aligner = "ALIGN_MAX", reducer = null, group_by = null },
      ]
      documentation = "A push subscription is not draining: the ingest function is failing (5xx), throttled, or the registry or BigQuery is down. ${local.runbook}"
    }

    # Either function answers 5xx: ingest asks for a redelivery (a failure a
    # retry can fix: registry, BigQuery), compact reports a failed flow.
    function_errors = {
      enabled      = local.monitoring.alerts
      display_name = "bqcdc: function errors"
      conditions = [
        { display_name = "5xx answers of the ingest and compact functions", filter = "metric.type = \"run.googleapis.com/request_count\" AND resource.type = \"cloud_run_revision\" AND metric.label.response_code_class = \"5xx\" AND (resource.label.service_name = \"${module.function["ingest"].service_name}\" OR resource.label.service_name = \"${module.function["compact"].service_name}\")", threshold = local.monitoring.function_errors_per_5m, duration = "0s", period = "300s", aligner = "ALIGN_DELTA", reducer = "REDUCE_SUM", group_by = ["resource.label.service_name"] },
      ]
      documentation = "The functions answer errors. Ingest logs each retry with event=retry and the stage; compact logs event=compaction outcome=failed. ${local.runbook}"
    }
  }
}

resource "google_monitoring_alert_policy" "bqcdc" {
  for_each     = { for name, p in local.alert_policies : name => p if p.enabled }
  project      = var.project_id
  display_name = each.value.display_name
  combiner     = "OR"
  user_labels  = local.labels

  dynamic "conditions" {
    for_each = each.value.conditions
    content {
      display_name = conditions.value.display_name

      dynamic "condition_threshold" {
        for_each = conditions.value.threshold == null ? [] : [conditions.value]
        content {
          filter          = condition_threshold.value.filter
          comparison      = "COMPARISON_GT"
          threshold_value = condition_threshold.value.threshold
          duration        = condition_threshold.value.duration
          aggregations {
            alignment_period     = condition_threshold.value.period
            per_series_aligner   = condition_threshold.value.aligner
            cross_series_reducer = condition_threshold.value.reducer
            group_by_fields      = condition_threshold.value.group_by
          }
        }
      }

      dynamic "condition_absent" {
        for_each = conditions.value.threshold == null ? [conditions.value] : []
        content {
          filter   = condition_absent.value.filter
          duration = condition_absent.value.duration
          aggregations {
            alignment_period     = condition_absent.value.period
            per_series_aligner   = condition_absent.value.aligner
            cross_series_reducer = condition_absent.value.reducer
            group_by_fields      = condition_absent.value.group_by
          }
        }
      }
    }
  }

  documentation {
    content   = each.value.documentation
    mime_type = "text/markdown"
  }
  notification_channels = local.channels
  # A policy on a bqcdc metric needs its descriptor; those on Google's
  # metrics wait for the descriptors too, which changes nothing for them.
  depends_on = [google_monitoring_metric_descriptor.bqcdc]
}

# The policies were one resource each (count = 0 or 1) before.
moved {
  from = google_monitoring_alert_policy.dead_letters[0]
  to   = google_monitoring_alert_policy.bqcdc["dead_letters"]
}

moved {
  from = google_monitoring_alert_policy.compaction[0]
  to   = google_monitoring_alert_policy.bqcdc["compaction"]
}

moved {
  from = google_monitoring_alert_policy.backlog[0]
  to   = google_monitoring_alert_policy.bqcdc["backlog"]
}

moved {
  from = google_monitoring_alert_policy.function_errors[0]
  to   = google_monitoring_alert_policy.bqcdc["function_errors"]
}

# A source's views lag its database: appends arrive late (publish -> append
# p99) or not at all (the push subscription's oldest unacknowledged
# message). A flow is as fresh as its source.
resource "google_monitoring_alert_policy" "freshness" {
  for_each     = local.alerts_on ? var.sources : {}
  project      = var.project_id
  display_name = "bqcdc: ${each.key} is not fresh"
  combiner     = "OR"
  user_labels  = local.labels

  conditions {
    display_name = "publish -> append p99 of ${each.key}"
    condition_threshold {
      filter          = "metric.type = \"workload.googleapis.com/bqcdc.ingest.lag\" AND metric.label.topic = \"${each.key}\" AND resource.type = \"generic_task\""
      comparison      = "COMPARISON_GT"
      threshold_value = coalesce(each.value.freshness_seconds, local.monitoring.freshness_seconds)
      duration        = "300s"
      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_DELTA"
        cross_series_reducer = "REDUCE_PERCENTILE_99"
        group_by_fields      = ["metric.label.topic"]
      }
    }
  }

  conditions {
    display_name = "oldest unacknowledged message of ${each.key}"
    condition_threshold {
      filter          = "metric.type = \"pubsub.googleapis.com/subscription/oldest_unacked_message_age\" AND resource.type = \"pubsub_subscription\" AND resource.label.subscription_id = \"${each.key}.bqcdc-ingest\""
      comparison      = "COMPARISON_GT"
      threshold_value = coalesce(each.value.freshness_seconds, local.monitoring.freshness_seconds)
      duration        = "300s"
      aggregations {
        alignment_period   = "60s"
        per_series_aligner = "ALIGN_MAX"
      }
    }
  }

  documentation {
    content   = "Changes of ${each.key} reach BigQuery late. Check the ingest function's errors and retries (bqcdc.ingest.messages outcome=retried, by stage) and the registry. ${local.runbook}"
    mime_type = "text/markdown"
  }
  notification_channels = local.channels
  depends_on            = [google_monitoring_metric_descriptor.bqcdc]
}

# --- Dashboard --------------------------------------------------------------

locals {
  # [title, metric filter, aligner, reducer, group by, plot type]
  dashboard_charts = [
    ["Messages by outcome (per 5 min)", "metric.type = \"workload.googleapis.com/bqcdc.ingest.messages\"", "ALIGN_DELTA", "REDUCE_SUM", ["metric.label.outcome"], "STACKED_BAR"],
    ["Dead letters and retries by stage", "metric.type = \"workload.googleapis.com/bqcdc.ingest.messages\" AND metric.label.outcome != \"appended\" AND metric.label.outcome != \"tombstone\"", "ALIGN_DELTA", "REDUCE_SUM", ["metric.label.outcome", "metric.label.stage", "metric.label.topic"], "STACKED_BAR"],
    ["Publish -> append lag p99 by topic (s)", "metric.type = \"workload.googleapis.com/bqcdc.ingest.lag\"", "ALIGN_DELTA", "REDUCE_PERCENTILE_99", ["metric.label.topic"], "LINE"],
    ["Oldest unacknowledged push message (s)", "metric.type = \"pubsub.googleapis.com/subscription/oldest_unacked_message_age\" AND ${local.ingest_subscriptions}", "ALIGN_MAX", "REDUCE_MAX", ["resource.label.subscription_id"], "LINE"],
    ["Append latency p50 / p99 (s)", "metric.type = \"workload.googleapis.com/bqcdc.append.duration\"", "ALIGN_DELTA", "REDUCE_PERCENTILE_99", ["metric.label.outcome"], "LINE"],
    ["Rows per append (mean)", "metric.type = \"workload.googleapis.com/bqcdc.append.rows\"", "ALIGN_DELTA", "REDUCE_MEAN", [], "LINE"],
    ["Decode time p99 (s)", "metric.type = \"workload.googleapis.com/bqcdc.ingest.decode_time\"", "ALIGN_DELTA", "REDUCE_PERCENTILE_99", ["metric.label.path"], "LINE"],
    ["Compaction runs by outcome", "metric.type = \"workload.googleapis.com/bqcdc.compaction.runs\"", "ALIGN_DELTA", "REDUCE_SUM", ["metric.label.outcome"], "STACKED_BAR"],
    ["Compaction duration p99 by flow (s)", "metric.type = \"workload.googleapis.com/bqcdc.compaction.duration\"", "ALIGN_DELTA", "REDUCE_PERCENTILE_99", ["metric.label.flow"], "LINE"],
    ["Unfolded age by flow (s)", "metric.type = \"workload.googleapis.com/bqcdc.compaction.unfolded_age\"", "ALIGN_MAX", "REDUCE_MAX", ["metric.label.flow"], "LINE"],
    ["Snapshot rows never applied by flow", "metric.type = \"workload.googleapis.com/bqcdc.compaction.snapshot_rows_skipped\"", "ALIGN_MAX", "REDUCE_MAX", ["metric.label.flow"], "LINE"],
    ["Materialized views: refreshed age (s)", "metric.type = \"workload.googleapis.com/bqcdc.compaction.gold_age\"", "ALIGN_MAX", "REDUCE_MAX", ["metric.label.view"], "LINE"],
    ["Events compacted by flow", "metric.type = \"workload.googleapis.com/bqcdc.compaction.events\"", "ALIGN_DELTA", "REDUCE_SUM", ["metric.label.flow"], "STACKED_BAR"],
    ["Compaction query jobs by flow", "metric.type = \"workload.googleapis.com/bqcdc.compaction.jobs\"", "ALIGN_DELTA", "REDUCE_SUM", ["metric.label.flow"], "STACKED_BAR"],
    ["Bytes billed by compaction", "metric.type = \"workload.googleapis.com/bqcdc.compaction.bytes_billed\"", "ALIGN_DELTA", "REDUCE_SUM", ["metric.label.flow"], "STACKED_BAR"],
    ["Function 5xx answers", "metric.type = \"run.googleapis.com/request_count\" AND resource.type = \"cloud_run_revision\" AND metric.label.response_code_class = \"5xx\"", "ALIGN_DELTA", "REDUCE_SUM", ["resource.label.service_name"], "STACKED_BAR"],
  ]
}

resource "google_monitoring_dashboard" "bqcdc" {
  count   = local.monitoring.dashboard ? 1 : 0
  project = var.project_id
  dashboard_json = jsonencode({
    displayName = "bqcdc (${var.dataset_id})"
    mosaicLayout = {
      columns = 48
      tiles = [for i, c in local.dashboard_charts : {
        xPos   = (i % 2) * 24
        yPos   = floor(i / 2) * 16
        width  = 24
        height = 16
        widget = {
          title = c[0]
          xyChart = {
            dataSets = [{
              plotType = c[5]
              timeSeriesQuery = {
                timeSeriesFilter = {
                  filter = c[1]
                  aggregation = {
                    alignmentPeriod    = "300s"
                    perSeriesAligner   = c[2]
                    crossSeriesReducer = c[3]
                    groupByFields      = c[4]
                  }
                }
              }
            }]
          }
        }
      }]
    }
  })
  depends_on = [google_monitoring_metric_descriptor.bqcdc]
}
