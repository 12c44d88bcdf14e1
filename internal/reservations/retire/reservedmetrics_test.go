package retire

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mpiguard/mpiguard/internal/quota"
)

// reservedSeries reads mpiguard_quota_reserved as "namespace/quota resource" -> value.
func reservedSeries(t *testing.T) map[string]float64 {
	t.Helper()
	return gaugeSeries(t, reserved)
}

// gaugeSeries reads a gauge of the quota metrics as "namespace/quota resource" -> value.
func gaugeSeries(t *testing.T, g *prometheus.GaugeVec) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	go func() { g.Collect(ch); close(ch) }()
	out := map[string]float64{}
	for m := range ch {
		d := readMetric(t, m)
		labels := map[string]string{}
		for _, l := range d.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		out[labels["namespace"]+"/"+labels["resourcequota"]+" "+labels["resource"]] = d.GetGauge().GetValue()
	}
	return out
}

func TestReservedPerQuotaAndResource(t *testing.T) {
	gpuQuota := corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "gpus"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("16"), "pods": resource.MustParse("10")}}}
	services := corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "objects"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"services": resource.MustParse("5")}}}
	worker := corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("4"), "pods": resource.MustParse("1")}
	launcher := corev1.ResourceList{"pods": resource.MustParse("1")}
	holders := []quota.Reservation{
		{TrainJob: "team-a/a", Parts: []quota.Part{{ReplicatedJob: "launcher", Pods: 1, PerPod: launcher}, {ReplicatedJob: "node", Pods: 2, PerPod: worker}}},
		{TrainJob: "team-a/b", Parts: []quota.Part{{ReplicatedJob: "node", Pods: 1, PerPod: worker}}},
	}
	t.Cleanup(func() { forgetReserved("team-a"); forgetReserved("team-b") })
	setReserved("team-b", []corev1.ResourceQuota{gpuQuota}, nil)

	setReserved("team-a", []corev1.ResourceQuota{gpuQuota, services}, holders)
	want := map[string]float64{
		"team-a/gpus requests.nvidia.com/gpu": 12, "team-a/gpus pods": 4, "team-a/objects services": 0,
		"team-b/gpus requests.nvidia.com/gpu": 0, "team-b/gpus pods": 0,
	}
	if diff := cmp.Diff(want, reservedSeries(t)); diff != "" {
		t.Errorf("mpiguard_quota_reserved (-want +got):\n%s", diff)
	}

	// Nothing held any more, and the objects quota deleted: its series go.
	setReserved("team-a", []corev1.ResourceQuota{gpuQuota}, nil)
	forgetReserved("team-b")
	want = map[string]float64{"team-a/gpus requests.nvidia.com/gpu": 0, "team-a/gpus pods": 0}
	if diff := cmp.Diff(want, reservedSeries(t)); diff != "" {
		t.Errorf("after release (-want +got):\n%s", diff)
	}
}

func readMetric(t *testing.T, m prometheus.Metric) *dto.Metric {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	return &d
}

func TestConsumption(t *testing.T) {
	gpuQuota := corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "nlp-team", Name: "gpus"},
		Spec:   corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("16"), "pods": resource.MustParse("0")}},
		Status: corev1.ResourceQuotaStatus{Used: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("3")}}}
	worker := corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("4")}
	reservations := []quota.Reservation{{TrainJob: "nlp-team/a", Parts: []quota.Part{{ReplicatedJob: "node", Pods: 3, PerPod: worker}}}}
	t.Cleanup(func() { forgetReserved("nlp-team") })

	setReserved("nlp-team", []corev1.ResourceQuota{gpuQuota}, reservations)
	if diff := cmp.Diff(map[string]float64{"nlp-team/gpus requests.nvidia.com/gpu": 15, "nlp-team/gpus pods": 0}, gaugeSeries(t, consumed)); diff != "" {
		t.Errorf("mpiguard_quota_used_or_reserved (-want +got):\n%s", diff)
	}
	// 15 of 16; a hard limit of 0 has no ratio.
	if diff := cmp.Diff(map[string]float64{"nlp-team/gpus requests.nvidia.com/gpu": 15.0 / 16}, gaugeSeries(t, consumption)); diff != "" {
		t.Errorf("mpiguard_quota_consumption_ratio (-want +got):\n%s", diff)
	}
	forgetReserved("nlp-team")
	if got := gaugeSeries(t, consumption); len(got) != 0 {
		t.Errorf("series left after the namespace's reservation went: %v", got)
	}
}
