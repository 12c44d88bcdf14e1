package render

import (
	"context"
	"fmt"
	"math/rand/v2"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeflow/trainer/v2/pkg/constants"

	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

// Random admission cases: each draws LimitRanges (defaults, min, max,
// maxLimitRequestRatio, a Pod item), PriorityClasses (globalDefault or not,
// named by the pods or not, missing), ServiceAccounts (named and present or
// absent), a RuntimeClass (overhead, scheduling, or missing) and the
// runtime's and TrainJob's resources, and goes through expectFidelity: every
// pod the apiserver's admission chain refuses must be a JobView problem and
// every admitted one charged, classed and tolerated as the JobView says.
//
// MPIGUARD_FIDELITY_SEED replays a run (the seed is printed at the start and
// in every case's name), MPIGUARD_FIDELITY_N sets how many cases (default 40).
var (
	fidelitySeed  = framework.EnvInt("MPIGUARD_FIDELITY_SEED", int64(rand.Uint32()))
	fidelityCases = int(framework.EnvInt("MPIGUARD_FIDELITY_N", 40))
)

var _ = Describe("JobView fidelity on random admission cases", func() {
	DescribeTable("renders what the apiserver's admission chain makes of the pods", func(ctx context.Context, i int) {
		By(fmt.Sprintf("replay: MPIGUARD_FIDELITY_SEED=%d go test ./test/integration/render/ -ginkgo.focus 'random %d$'", fidelitySeed, i))
		expectFidelity(ctx, randomPair(fidelitySeed, i))
	}, randomEntries())
})

func randomEntries() []TableEntry {
	fmt.Printf("render fidelity: random admission cases from seed %d (replay: MPIGUARD_FIDELITY_SEED=%d), %d cases\n", fidelitySeed, fidelitySeed, fidelityCases)
	entries := make([]TableEntry, fidelityCases)
	for i := range entries {
		entries[i] = Entry(fmt.Sprintf("seed %d random %d", fidelitySeed, i), i)
	}
	return entries
}

// tally counts the random cases whose pods the apiserver refused, so a run
// shows it compared both outcomes.
var tally struct{ random, refused int }

func tallyCase(p pair, rejected []string) {
	if !p.random {
		return
	}
	tally.random++
	if len(rejected) > 0 {
		tally.refused++
	}
}

var _ = AfterSuite(func() {
	if tally.random == 0 {
		return
	}
	fmt.Printf("render fidelity: %d random cases, %d with pods the apiserver refused (seed %d)\n", tally.random, tally.refused, fidelitySeed)
	if tally.random >= 20 {
		Expect(tally.refused).To(BeNumerically(">", 0), "no random case had pods refused (seed %d): the generator lost its reach", fidelitySeed)
		Expect(tally.refused).To(BeNumerically("<", tally.random), "every random case had pods refused (seed %d)", fidelitySeed)
	}
})

// randomPair is random case i of seed. Cluster-scoped names carry the case,
// so cases never share a PriorityClass or RuntimeClass.
func randomPair(seed int64, i int) pair {
	r := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
	chance := func(p float64) bool { return r.Float64() < p }
	tag := fmt.Sprintf("%d-%d", seed, i)
	p := pair{random: true}

	var runtimeClass *string
	if chance(0.4) {
		rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "fid-rc-" + tag}, Handler: "kata"}
		if chance(0.8) {
			rc.Overhead = &nodev1.Overhead{PodFixed: rl(pickOf(r, "cpu=100m", "cpu=250m"), pickOf(r, "memory=64Mi", "memory=120Mi"))}
		}
		if chance(0.3) {
			rc.Scheduling = &nodev1.Scheduling{NodeSelector: map[string]string{"example.com/runtime": "kata"},
				Tolerations: []corev1.Toleration{{Key: "example.com/kata", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}
		}
		p.runtimeClasses = append(p.runtimeClasses, rc)
		name := rc.Name
		if chance(0.1) {
			name += "-missing" // the RuntimeClass plugin refuses the pods
		}
		runtimeClass = &name
	}

	var classes []string
	if chance(0.6) {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "fid-pc-" + tag + "-a"}, Value: int32(r.IntN(1000)), GlobalDefault: chance(0.5)}
		p.priorityClasses = append(p.priorityClasses, pc)
		classes = append(classes, pc.Name)
		if chance(0.4) {
			pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "fid-pc-" + tag + "-b"}, Value: int32(r.IntN(1000))}
			p.priorityClasses = append(p.priorityClasses, pc)
			classes = append(classes, pc.Name)
		}
	}
	priorityClass := func() string {
		switch {
		case chance(0.05):
			return "fid-pc-" + tag + "-missing" // the Priority plugin refuses the pods
		case len(classes) > 0 && chance(0.4):
			return pickOf(r, classes...)
		}
		return ""
	}

	if chance(0.5) {
		p.serviceAccounts = append(p.serviceAccounts, "trainer")
	}
	serviceAccount := func() string {
		switch {
		case chance(0.05):
			return "absent" // the ServiceAccount plugin refuses the pods
		case chance(0.3):
			return "trainer" // refused too unless the case created it
		}
		return ""
	}

	if chance(0.6) {
		p.limitRanges = append(p.limitRanges, randomLimitRange(r, chance))
	}

	runtimeResources := func() (corev1.ResourceList, corev1.ResourceList) {
		req, lim := corev1.ResourceList{}, corev1.ResourceList{}
		if chance(0.6) {
			req[corev1.ResourceCPU] = resource.MustParse(pickOf(r, "250m", "500m", "1", "2"))
		}
		if chance(0.5) {
			lim[corev1.ResourceCPU] = resource.MustParse(pickOf(r, "1", "2", "4"))
		}
		if chance(0.6) {
			req[corev1.ResourceMemory] = resource.MustParse(pickOf(r, "512Mi", "1Gi", "2Gi"))
		}
		if chance(0.5) {
			lim[corev1.ResourceMemory] = resource.MustParse(pickOf(r, "2Gi", "4Gi"))
		}
		return req, lim
	}
	launcherReq, launcherLim := runtimeResources()
	nodeReq, nodeLim := runtimeResources()
	launcherPC, nodePC := priorityClass(), priorityClass()
	launcherSA, nodeSA := serviceAccount(), serviceAccount()
	p.runtime = clusterRuntime(func(b *fixtures.RuntimeBuilder) {
		b.Resources(constants.Launcher, launcherReq, launcherLim)
		b.Resources(constants.Node, nodeReq, nodeLim)
		for job, pc := range map[string]string{constants.Launcher: launcherPC, constants.Node: nodePC} {
			b.PodSpec(job).PriorityClassName = pc
		}
		for job, sa := range map[string]string{constants.Launcher: launcherSA, constants.Node: nodeSA} {
			b.PodSpec(job).ServiceAccountName = sa
		}
		if runtimeClass != nil {
			b.PodSpec(constants.Node).RuntimeClassName = runtimeClass
		}
		if chance(0.2) {
			b.PodSpec(constants.Node).Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(r.IntN(600)))}}
		}
	})

	numNodes := int32(1 + r.IntN(3))
	var requests, limits []string
	if chance(0.6) {
		requests = append(requests, "cpu="+pickOf(r, "500m", "1", "2"))
	}
	if chance(0.5) {
		limits = append(limits, "cpu="+pickOf(r, "1", "2", "4", "8"))
	}
	if chance(0.5) {
		requests = append(requests, "memory="+pickOf(r, "1Gi", "4Gi"))
	}
	if chance(0.4) {
		limits = append(limits, "memory="+pickOf(r, "4Gi", "8Gi"))
	}
	p.trainJob = job(func(b *fixtures.TrainJobBuilder) {
		b.NumNodes(numNodes)
		if len(requests) > 0 {
			b.Requests(kv(requests...)...)
		}
		if len(limits) > 0 {
			b.Limits(kv(limits...)...)
		}
	})
	return p
}

// randomLimitRange is a valid LimitRange: a Container item for cpu and
// memory with min <= defaultRequest <= default <= max (each maybe absent)
// and a cpu maxLimitRequestRatio no lower than default/defaultRequest, and
// maybe a Pod item with a maximum.
func randomLimitRange(r *rand.Rand, chance func(float64) bool) *corev1.LimitRange {
	item := corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{}, DefaultRequest: corev1.ResourceList{},
		Min: corev1.ResourceList{}, Max: corev1.ResourceList{}, MaxLimitRequestRatio: corev1.ResourceList{}}
	bounds := func(name corev1.ResourceName, unit string, defaultRequest int64) {
		def := defaultRequest * int64(1+r.IntN(2))
		ratio := chance(0.3) && name == corev1.ResourceCPU
		if ratio || chance(0.7) {
			item.DefaultRequest[name] = *resource.NewScaledQuantity(defaultRequest, scaleOf(unit))
			item.Default[name] = *resource.NewScaledQuantity(def, scaleOf(unit))
		}
		if ratio {
			item.MaxLimitRequestRatio[name] = resource.MustParse(pickOf(r, "2", "4"))
		}
		if chance(0.3) {
			item.Min[name] = *resource.NewScaledQuantity(defaultRequest/int64(1+r.IntN(2)), scaleOf(unit))
		}
		if chance(0.3) {
			item.Max[name] = *resource.NewScaledQuantity(def*int64(1+r.IntN(4)), scaleOf(unit))
		}
	}
	bounds(corev1.ResourceCPU, "m", pickOf(r, int64(250), 500, 1000))
	bounds(corev1.ResourceMemory, "M", pickOf(r, int64(512), 1024))
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "random"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{item}}}
	if chance(0.3) {
		lr.Spec.Limits = append(lr.Spec.Limits, corev1.LimitRangeItem{Type: corev1.LimitTypePod,
			Max: rl(pickOf(r, "cpu=2", "cpu=4", "cpu=16"), pickOf(r, "memory=4Gi", "memory=16Gi"))})
	}
	return lr
}

// scaleOf is the scale of "m" (millicores) or "M" (megabytes).
func scaleOf(unit string) resource.Scale {
	if unit == "m" {
		return resource.Milli
	}
	return resource.Mega
}

func pickOf[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }
