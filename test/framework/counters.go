package framework

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Counter sums the series of counter name whose labels include labels, in
// controller-runtime's metrics registry: the suites run mpiguard's managers in
// the test binary, so their metrics are there. 0 when there is none.
func Counter(name string, labels map[string]string) float64 {
	ginkgo.GinkgoHelper()
	families, err := metrics.Registry.Gather()
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue metric
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}
