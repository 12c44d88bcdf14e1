package retire

import "github.com/mpiguard/mpiguard/test/fixtures"

// The pods, JobSets, entries and quotas of these tests.
var (
	pod       = fixtures.JobSetPod
	jobSetOf  = fixtures.JobSetOf
	entry     = fixtures.ReservationEntry
	usedQuota = fixtures.UsedQuota
	list      = fixtures.ResourceList
)
