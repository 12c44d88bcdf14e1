package auditlog

import (
	"bufio"
	"context"
	"encoding/json"
	"os"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// auditEvent is what the specs read of an audit.k8s.io/v1 Event.
type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Annotations map[string]string `json:"annotations"`
}

// auditEventOf is the ResponseComplete event of verb on TrainJob ns/name in
// the apiserver's audit log; nil while there is none.
func auditEventOf(verb, ns, name string) *auditEvent {
	GinkgoHelper()
	f, err := os.Open(env.AuditLog)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Close() }()
	var found *auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var e auditEvent
		Expect(json.Unmarshal(sc.Bytes(), &e)).To(Succeed())
		if e.Stage == "ResponseComplete" && e.Verb == verb && e.ObjectRef.Resource == "trainjobs" && e.ObjectRef.Namespace == ns && e.ObjectRef.Name == name {
			found = &e
		}
	}
	Expect(sc.Err()).NotTo(HaveOccurred())
	return found
}

// eventually waits for the audit event of verb on ns/name.
func eventually(ctx context.Context, verb, ns, name string) *auditEvent {
	GinkgoHelper()
	var e *auditEvent
	Eventually(ctx, func() *auditEvent { e = auditEventOf(verb, ns, name); return e }).ShouldNot(BeNil(), "no %s of TrainJob %s/%s in %s", verb, ns, name, env.AuditLog)
	return e
}

// deletions are the DELETE lines of the decision log of replica 0 for ns/name.
func deletions(ns, name string) []map[string]any {
	GinkgoHelper()
	var out []map[string]any
	env.DecisionsPerReplica(func(l map[string]any) bool {
		if l["operation"] == "DELETE" && l["namespace"] == ns && l["trainJob"] == name {
			out = append(out, l)
		}
		return false
	})
	return out
}

var _ = Describe("mpiguard in the apiserver's audit log", Ordered, func() {
	var ns, runtime string
	BeforeAll(func(ctx context.Context) {
		ns = env.Namespace(ctx, nil)
		runtime = env.CreateClusterRuntime(ctx, fixtures.GPUWorkersRuntime("audit-"+ns, "4").Cluster()).Name
		// A quota, so an admitted job holds a reservation entry until its pods exist.
		env.CreateQuota(ctx, fixtures.ResourceQuota(ns, "gpus", "requests.nvidia.com/gpu", "64"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
	})

	It("annotates an admitted create with the verdict and the reservation written", func(ctx context.Context) {
		Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, "admitted", runtime).NumNodes(2).Obj())).To(Succeed())
		e := eventually(ctx, "create", ns, "admitted")
		Expect(e.Annotations).To(HaveKeyWithValue("vtrainjob.mpiguard.io/verdict", "allowed"))
		Expect(e.Annotations).To(HaveKeyWithValue("vtrainjob.mpiguard.io/reservation", "written"))
		Expect(e.Annotations).To(HaveKey("vtrainjob.mpiguard.io/policy-set"))
		Expect(e.Annotations).To(HaveKeyWithValue("mtrainjob.mpiguard.io/mutated", "true"))
		Expect(env.ReservedJobs(ctx, ns)).To(ContainElement("admitted"))
	})

	It("annotates a denied create with the policies that denied it and the reservation refused", func(ctx context.Context) {
		err := env.Client.Create(ctx, fixtures.TrainJob(ns, "denied", runtime).NumNodes(2).NumProcPerNode(2).Obj())
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want a denial, got %v", err)
		e := eventually(ctx, "create", ns, "denied")
		Expect(e.ResponseStatus.Code).To(Equal(403))
		Expect(e.Annotations).To(HaveKeyWithValue("vtrainjob.mpiguard.io/verdict", "denied"))
		Expect(e.Annotations).To(HaveKeyWithValue("vtrainjob.mpiguard.io/denied-by", ContainSubstring("slots-gpus")))
		Expect(e.Annotations).To(HaveKeyWithValue("vtrainjob.mpiguard.io/reservation", "refused"))
	})

	It("annotates an update", func(ctx context.Context) {
		Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, "queued", runtime).NumNodes(2).Suspend(true).Obj())).To(Succeed())
		job := &trainer.TrainJob{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "queued"}, job)).To(Succeed())
		// Another tool's runtime patch: a spec change mpiguard judges.
		job.Spec.RuntimePatches = append(job.Spec.RuntimePatches, trainer.RuntimePatch{Manager: "example.com/tuner"})
		Expect(env.Client.Update(ctx, job)).To(Succeed())
		e := eventually(ctx, "update", ns, "queued")
		Expect(e.Annotations).To(HaveKeyWithValue("vtrainjob.mpiguard.io/verdict", "allowed"))
		Expect(e.Annotations).To(HaveKey("vtrainjob.mpiguard.io/policy-set"))
	})

	It("records a delete in the decision log with the user, and annotates it", func(ctx context.Context) {
		Expect(env.Client.Delete(ctx, &trainer.TrainJob{ObjectMeta: objectMeta(ns, "admitted")})).To(Succeed())
		e := eventually(ctx, "delete", ns, "admitted")
		Expect(e.ResponseStatus.Code).To(Equal(200))
		Expect(e.Annotations).To(HaveKeyWithValue("odelete.mpiguard.io/verdict", "allowed"))
		Expect(e.Annotations).To(HaveKeyWithValue("odelete.mpiguard.io/recorded", "true"))
		Expect(e.Annotations).To(HaveKeyWithValue("odelete.mpiguard.io/phase", "Running"))
		Expect(e.Annotations).To(HaveKeyWithValue("odelete.mpiguard.io/reservation", "held"))
		lines := deletions(ns, "admitted")
		Expect(lines).To(HaveLen(1))
		Expect(lines[0]).To(HaveKeyWithValue("user", e.User.Username))
		Expect(lines[0]).To(HaveKeyWithValue("phase", "Running"))
		Expect(lines[0]).To(HaveKeyWithValue("reservation", HaveKeyWithValue("trainJob", "admitted")))
		Expect(lines[0]).NotTo(HaveKey("dryRunRequest"))
	})

	It("records a dry-run delete as a dry run and deletes nothing", func(ctx context.Context) {
		Expect(env.Client.Delete(ctx, &trainer.TrainJob{ObjectMeta: objectMeta(ns, "queued")}, client.DryRunAll)).To(Succeed())
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "queued"}, &trainer.TrainJob{})).To(Succeed())
		Eventually(func() []map[string]any { return deletions(ns, "queued") }).Should(ConsistOf(And(
			HaveKeyWithValue("dryRunRequest", true), HaveKeyWithValue("phase", "Suspended"))))
	})

	It("never blocks a delete while mpiguard is down", func(ctx context.Context) {
		for _, r := range env.Replicas {
			Expect(r.Stop()).To(Succeed())
		}
		Expect(env.Client.Delete(ctx, &trainer.TrainJob{ObjectMeta: objectMeta(ns, "queued")})).To(Succeed())
		Eventually(ctx, func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "queued"}, &trainer.TrainJob{}))
		}).Should(BeTrue())
		e := eventually(ctx, "delete", ns, "queued")
		Expect(e.ResponseStatus.Code).To(Equal(200))
		Expect(e.Annotations).NotTo(HaveKey("odelete.mpiguard.io/recorded"))
	})
})

func objectMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}
