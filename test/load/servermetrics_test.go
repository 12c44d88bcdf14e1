package load

import (
	"fmt"
	"math"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// handlerLatencies is a snapshot of controller-runtime's webhook latency
// histogram for one webhook path: the time from the server reading a request
// to the answer being written (decode, mpiguard's handler, encode). It is a
// native histogram with buckets 10% wide, so percentiles of the difference of
// two snapshots are good to about 10%.
type handlerLatencies struct {
	zero    float64
	buckets map[int]float64 // bucket index -> count
	schema  int32
}

func snapshotHandlerLatencies(path string) (handlerLatencies, error) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return handlerLatencies{}, err
	}
	for _, mf := range families {
		if mf.GetName() != "controller_runtime_webhook_latency_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelValue(m, "webhook") == path {
				return readNative(m.GetHistogram())
			}
		}
	}
	return handlerLatencies{buckets: map[int]float64{}}, nil // no request served yet
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// readNative reads a native histogram's positive buckets (latencies are never
// negative): spans of consecutive bucket indexes, counts delta-encoded.
func readNative(h *dto.Histogram) (handlerLatencies, error) {
	if h.GetSchema() == 0 && len(h.GetPositiveSpan()) == 0 && h.GetSampleCount() > h.GetZeroCount() {
		return handlerLatencies{}, fmt.Errorf("the webhook latency histogram has no native buckets")
	}
	out := handlerLatencies{zero: float64(h.GetZeroCount()), buckets: map[int]float64{}, schema: h.GetSchema()}
	idx, count, d := 0, int64(0), 0
	for _, span := range h.GetPositiveSpan() {
		idx += int(span.GetOffset())
		for range span.GetLength() {
			count += h.GetPositiveDelta()[d]
			d++
			out.buckets[idx] = float64(count)
			idx++
		}
	}
	return out, nil
}

// quantilesSince returns the p50 and p99 of the requests served between
// before and h (upper bounds of their buckets).
func (h handlerLatencies) quantilesSince(before handlerLatencies) (p50, p99 time.Duration) {
	base := math.Pow(2, math.Pow(2, -float64(h.schema)))
	total := h.zero - before.zero
	idxs := make([]int, 0, len(h.buckets))
	for i, c := range h.buckets {
		total += c - before.buckets[i]
		idxs = append(idxs, i)
	}
	sort.Ints(idxs)
	at := func(q float64) time.Duration {
		cum := h.zero - before.zero
		for _, i := range idxs {
			if cum >= q*total {
				break
			}
			cum += h.buckets[i] - before.buckets[i]
			if cum >= q*total {
				return time.Duration(math.Pow(base, float64(i)) * float64(time.Second))
			}
		}
		return 0
	}
	return at(0.50), at(0.99)
}
