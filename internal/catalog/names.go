package catalog

import "strconv"

// The names bqcdc owns. Every object a deployment holds is named by this
// package: a flow's and a materialized view's by the functions of flow.go
// (flow.(*Flow).Objects and flow.(*Gold).Objects list them), the
// changelogs by TableName, and the deployment's own tables here. No flow
// target or materialized view may take one of them: flow.ParseFilesAll
// refuses a second claimant of any name, and a name with a reserved
// prefix or suffix even when its owner does not exist yet.

// ReservedPrefix begins the name of every table and view a deployment
// holds for itself (DeploymentTables).
const ReservedPrefix = "_bqcdc_"

// Suffixes of the tables bqcdc keeps beside a target or a materialized
// view: no target or view may end with one, whether or not the flow or
// view it would belong to exists.
const (
	GoldFinalSuffix = "__final"
	ChangelogSuffix = "_changelog" // of the default dataset's changelogs (TableName)
)

// ReservedSuffixes end the names of the tables bqcdc keeps beside a
// target (its state and change tables, a materialized view's final
// windows).
func ReservedSuffixes() []string { return []string{StateSuffix, ChangeTableSuffix, GoldFinalSuffix} }

// DeploymentTables are the tables and views every deployment holds in its
// default dataset (Terraform's BigQuery subscription writes
// PubSubDeadLetterTable).
func DeploymentTables() []string {
	return []string{DeadLetterTable, AppendsTable, CompactionRunsTable, CompactionStateView, StatusView,
		FlowsTable, FlowsTable + "__next", PubSubDeadLetterTable}
}

// FlowLabel on a flow's view names the flow that made it (FlowLabelValue
// of its name): of two flows claiming one target, apply keeps the one
// the deployed view names.
const FlowLabel = "bqcdc-flow"

// FlowLabelValue is a flow name as a label value (lower case; flow names
// are unique regardless of case): at most 63 characters, the longest a
// label value may have, a longer name cut and ended with its length.
func FlowLabelValue(name string) string {
	v := make([]byte, 0, len(name))
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		v = append(v, c)
	}
	if len(v) > 63 {
		tail := "-" + strconv.Itoa(len(v))
		v = append(v[:63-len(tail)], tail...)
	}
	return string(v)
}
