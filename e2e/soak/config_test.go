package soak

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// config is one soak's load and faults. The zero SOAK_* environment gives
// the short variant of `make soak-short`; `make soak` sets the full one.
type config struct {
	Seed uint64
	// Duration of the live edits, at Rate per second, over Tenants
	// Kustomizations (each in its namespace, with its repository) holding
	// Objects ConfigMaps between them.
	Duration time.Duration
	Rate     float64
	Tenants  int
	Objects  int
	// Kills is how many times the leader is SIGKILLed; every fourth at
	// random, the others inside write-back.
	Kills int
	// Restarts of kube-apiserver; the last follows an etcd compaction, so
	// informers resuming their watches get 410 Gone and list again.
	Restarts int
	// GitDown and ForgeErrors are how long the git server is down and
	// Gitea answers 500 and 429.
	GitDown, ForgeErrors time.Duration
	// Reviews are the reviewer actions taken mid-flight.
	Reviews []review
	// Pause SIGSTOPs the leader past its lease once, when set.
	Pause bool
	// FluxInterval is the Kustomizations' interval: how often Flux
	// reverts what is not held. Zero paces Flux from the harness instead,
	// never during a process fault (see pacer).
	FluxInterval time.Duration
	// Drain bounds how long after the last fault every invariant must
	// hold.
	Drain time.Duration
	// Results, when set, is the file the figures are written into.
	Results string
}

// review is a reviewer's action on one reflux pull request.
type review string

const (
	reviewMerge  review = "merge"
	reviewClose  review = "close"
	reviewDelete review = "delete-branch"
	reviewPush   review = "human-push"
)

// shortConfig is the variant `make soak-short` runs.
func shortConfig() config {
	return config{Duration: 2 * time.Minute, Rate: 4, Tenants: 2, Objects: 80, Kills: 4, Restarts: 1,
		GitDown: 20 * time.Second, ForgeErrors: 20 * time.Second, Reviews: []review{reviewMerge, reviewPush},
		Pause: true, Drain: 4 * time.Minute}
}

// loadConfig reads SOAK_* over the short variant's values.
func loadConfig() (config, error) {
	c := shortConfig()
	c.Seed = uint64(time.Now().UnixNano())
	var errs []string
	get := func(name string, set func(string) error) {
		if v := os.Getenv(name); v != "" {
			if err := set(v); err != nil {
				errs = append(errs, fmt.Sprintf("%s=%q: %v", name, v, err))
			}
		}
	}
	dur := func(d *time.Duration) func(string) error {
		return func(s string) (err error) { *d, err = time.ParseDuration(s); return err }
	}
	num := func(n *int) func(string) error {
		return func(s string) (err error) { *n, err = strconv.Atoi(s); return err }
	}
	get("SOAK_SEED", func(s string) (err error) { c.Seed, err = strconv.ParseUint(s, 10, 64); return err })
	get("SOAK_DURATION", dur(&c.Duration))
	get("SOAK_RATE", func(s string) (err error) { c.Rate, err = strconv.ParseFloat(s, 64); return err })
	get("SOAK_KUSTOMIZATIONS", num(&c.Tenants))
	get("SOAK_OBJECTS", num(&c.Objects))
	get("SOAK_KILLS", num(&c.Kills))
	get("SOAK_RESTARTS", num(&c.Restarts))
	get("SOAK_GIT_DOWN", dur(&c.GitDown))
	get("SOAK_FORGE_ERRORS", dur(&c.ForgeErrors))
	get("SOAK_FLUX_INTERVAL", dur(&c.FluxInterval))
	get("SOAK_DRAIN", dur(&c.Drain))
	get("SOAK_REVIEWS", func(s string) error {
		c.Reviews = nil
		for r := range strings.SplitSeq(s, ",") {
			c.Reviews = append(c.Reviews, review(strings.TrimSpace(r)))
		}
		return nil
	})
	c.Results = os.Getenv("SOAK_RESULTS")
	if len(errs) > 0 {
		return c, fmt.Errorf("soak configuration: %s", strings.Join(errs, "; "))
	}
	return c, nil
}

// paced reports whether the harness paces Flux.
func (c config) paced() bool { return c.FluxInterval == 0 }

// String is the configuration as the figures print it.
func (c config) String() string {
	return fmt.Sprintf("seed %d: %s of live edits at %.0f/s over %d Kustomizations and %d objects; "+
		"%d leader kills, %d apiserver restarts, git down %s, forge errors %s, reviews %v, pause %v; Flux %s",
		c.Seed, c.Duration, c.Rate, c.Tenants, c.Objects, c.Kills, c.Restarts, c.GitDown, c.ForgeErrors, c.Reviews, c.Pause, c.flux())
}

func (c config) flux() string {
	if c.paced() {
		return fmt.Sprintf("paced by the harness every %s, never during a process fault", pacePeriod)
	}
	return "every " + c.FluxInterval.String()
}

// process reports whether the fault is one of a replica or the
// apiserver, during which no replica may lead.
func (k faultKind) process() bool {
	switch k {
	case gitDown, forgeErrors, reviewAction:
		return false
	}
	return true
}

// faultKind names one scheduled fault.
type faultKind string

const (
	killRandom     faultKind = "kill-random"
	killBeforePush faultKind = "kill-between-commit-and-push"
	killAfterPush  faultKind = "kill-between-push-and-record"
	killAfterPR    faultKind = "kill-between-pr-and-record"
	pauseLeader    faultKind = "pause-leader-past-lease"
	restartAPI     faultKind = "restart-apiserver"
	expireWatches  faultKind = "compact-etcd-and-restart-apiserver"
	gitDown        faultKind = "git-server-down"
	forgeErrors    faultKind = "gitea-500-and-429"
	reviewAction   faultKind = "review"
)

// fault is one entry of the schedule: what, when (after the load began)
// and, for a review, which.
type fault struct {
	At     time.Duration
	Kind   faultKind
	Review review
}

// lane is a sequence of faults run one after another: process faults
// (kills, pauses, restarts) on one, the network's and the reviewers' on
// the other, so an outage and a kill can overlap as in production.
type lane []fault

// schedule draws the faults' times from the seed, between a tenth and
// four fifths of the load, and sorts each lane.
func (c config) schedule() (process, network lane) {
	r := rand.New(rand.NewPCG(c.Seed, c.Seed^0x9e3779b97f4a7c15))
	at := func() time.Duration {
		lo, hi := c.Duration/10, c.Duration*4/5
		return lo + time.Duration(r.Int64N(int64(hi-lo)))
	}
	kinds := []faultKind{killRandom, killBeforePush, killAfterPush, killAfterPR}
	for i := range c.Kills {
		process = append(process, fault{At: at(), Kind: kinds[i%len(kinds)]})
	}
	// A pull request is opened once per branch, and a Kustomization keeps
	// one branch while its drift is open: the first kill inside a pull
	// request's creation waits for the first ones, as the load begins.
	if i := slices.IndexFunc(process, func(f fault) bool { return f.Kind == killAfterPR }); i >= 0 {
		process[i].At = 0
	}
	for i := range c.Restarts {
		k := restartAPI
		if i == c.Restarts-1 {
			k = expireWatches
		}
		process = append(process, fault{At: at(), Kind: k})
	}
	if c.Pause {
		process = append(process, fault{At: at(), Kind: pauseLeader})
	}
	if c.GitDown > 0 {
		network = append(network, fault{At: at(), Kind: gitDown})
	}
	if c.ForgeErrors > 0 {
		network = append(network, fault{At: at(), Kind: forgeErrors})
	}
	for _, rv := range c.Reviews {
		network = append(network, fault{At: at(), Kind: reviewAction, Review: rv})
	}
	byTime := func(a, b fault) int { return int(a.At - b.At) }
	slices.SortStableFunc(process, byTime)
	slices.SortStableFunc(network, byTime)
	return process, network
}
