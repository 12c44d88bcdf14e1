package app

import (
	"context"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/mpiguard/mpiguard/internal/audit"
	"github.com/mpiguard/mpiguard/internal/follow"
	"github.com/mpiguard/mpiguard/internal/kueuecheck"
	"github.com/mpiguard/mpiguard/networkpolicies"
	"github.com/mpiguard/mpiguard/runtimes/publisher"
	"github.com/mpiguard/mpiguard/runtimes/smoketest"
	"github.com/mpiguard/mpiguard/webhooks/runtimetemplate"
)

// Options switches mpiguard's components on and off and carries their settings.
// Each component adds its own field and flags here.
type Options struct {
	// TrainJobWebhooks serves the validating and mutating TrainJob webhooks.
	TrainJobWebhooks bool
	// Policies configures the policy engine behind the TrainJob webhooks.
	Policies PolicyOptions
	// Audit judges stored TrainJobs and runtimes with the webhooks' policies
	// and publishes openreports.io reports (needs TrainJobWebhooks: it
	// shares their engine).
	Audit audit.Options
	// KueueAdmissionCheck answers Kueue AdmissionChecks whose controllerName
	// is mpiguard.io/admission (needs TrainJobWebhooks: it shares their
	// pipeline; off by itself when Kueue's CRDs are not installed).
	KueueAdmissionCheck kueuecheck.Options
	// RuntimePublisher publishes the curated MPI ClusterTrainingRuntimes.
	RuntimePublisher publisher.Options
	// RuntimeTemplateWebhook validates MPI (Cluster)TrainingRuntime templates.
	RuntimeTemplateWebhook bool
	// RuntimeTests runs the RuntimeTest smoke-test controller.
	RuntimeTests smoketest.Options
	// NetworkPolicies keeps one NetworkPolicy per MPI TrainJob.
	NetworkPolicies networkpolicies.Options
	// Follow follows every MPI TrainJob to its end and puts Events on it
	// saying why its pods wait and which pod failed and why.
	Follow follow.Options
}

// DefaultOptions enables everything.
func DefaultOptions() Options {
	return Options{
		TrainJobWebhooks:       true,
		Policies:               DefaultPolicyOptions(),
		Audit:                  audit.DefaultOptions(),
		KueueAdmissionCheck:    kueuecheck.DefaultOptions(),
		RuntimePublisher:       publisher.DefaultOptions(),
		RuntimeTemplateWebhook: true,
		RuntimeTests:           smoketest.DefaultOptions(),
		NetworkPolicies:        networkpolicies.DefaultOptions(),
		Follow:                 follow.DefaultOptions(),
	}
}

// AddFlags binds component flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.TrainJobWebhooks, "trainjob-webhooks", o.TrainJobWebhooks, "Serve the TrainJob admission webhooks.")
	o.Policies.AddFlags(fs)
	fs.BoolVar(&o.Audit.Enabled, "audit", o.Audit.Enabled, "Audit stored TrainJobs and runtimes with today's policies (on the elected leader) and publish openreports.io Reports; needs --trainjob-webhooks.")
	fs.DurationVar(&o.Audit.Interval, "audit-interval", o.Audit.Interval, "Re-audit each namespace and the ClusterTrainingRuntimes this long after their last audit, besides the audits changes trigger.")
	fs.DurationVar(&o.Audit.Debounce, "audit-debounce", o.Audit.Debounce, "Audit a changed namespace once its changes have rested this long (a burst of submits is audited once, after it, leaving the CPU to admission).")
	fs.DurationVar(&o.Audit.MaxDelay, "audit-max-delay", o.Audit.MaxDelay, "Audit a namespace that keeps changing at the latest this long after its first unaudited change.")
	fs.BoolVar(&o.Audit.PassResults, "audit-pass-results", o.Audit.PassResults, "List a pass result per policy for every passing object in the Reports, not only the violations (the summary counts passes either way); every passing job then adds a result per policy to the Reports the audit writes, which makes a full audit several times as long.")
	fs.BoolVar(&o.KueueAdmissionCheck.Enabled, "kueue-admission-check", o.KueueAdmissionCheck.Enabled, "Answer Kueue AdmissionChecks with controllerName mpiguard.io/admission (on the elected leader; off by itself when Kueue's CRDs are not installed); needs --trainjob-webhooks.")
	fs.DurationVar(&o.KueueAdmissionCheck.RetryBackoff, "kueue-retry-backoff", o.KueueAdmissionCheck.RetryBackoff, "How long Kueue waits before it offers again a Workload whose mpiguard check said Retry (namespace quota busy); doubled on each further retry.")
	fs.DurationVar(&o.KueueAdmissionCheck.MaxRetryBackoff, "kueue-max-retry-backoff", o.KueueAdmissionCheck.MaxRetryBackoff, "Upper bound of --kueue-retry-backoff's doubling.")
	o.RuntimePublisher.AddFlags(fs)
	fs.BoolVar(&o.RuntimeTemplateWebhook, "runtime-template-webhook", o.RuntimeTemplateWebhook, "Serve the (Cluster)TrainingRuntime MPI template webhook.")
	o.RuntimeTests.AddFlags(fs)
	o.NetworkPolicies.AddFlags(fs)
	o.Follow.AddFlags(fs)
}

// Setup registers every enabled controller and webhook with the manager.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.TrainJobWebhooks {
		eng, err := setupPolicies(ctx, mgr, opts.Policies, opts.Audit, opts.KueueAdmissionCheck, opts.NetworkPolicies)
		if err != nil {
			return err
		}
		// The follower warns near a job's deadline at the max-duration
		// policy's warnAtPercent, reloaded with the policies.
		opts.Follow.Parameter = eng.Parameter
	}
	if err := publisher.SetupWithManager(mgr, opts.RuntimePublisher); err != nil {
		return err
	}
	if err := runtimetemplate.SetupWithManager(mgr, runtimetemplate.Options{Enabled: opts.RuntimeTemplateWebhook}); err != nil {
		return err
	}
	if err := smoketest.SetupWithManager(mgr, opts.RuntimeTests); err != nil {
		return err
	}
	if err := networkpolicies.SetupWithManager(mgr, opts.NetworkPolicies); err != nil {
		return err
	}
	if err := follow.SetupWithManager(mgr, opts.Follow); err != nil {
		return err
	}
	return nil
}
