// Package flowcontrol is kubeproof's API Priority and Fairness (APF,
// flowcontrol.apiserver.k8s.io/v1), which kube-apiserver uses by default
// in place of the max-in-flight limits: every request is classified by a
// FlowSchema into a priority level, each level has its share of the
// server's seats, and a level whose seats are taken queues requests
// fairly per flow instead of turning them away.
//
// What it does, as kube-apiserver:
//   - Configuration: kube-apiserver's mandatory and suggested FlowSchemas
//     and PriorityLevelConfigurations (DefaultFlowSchemas,
//     DefaultPriorityLevels) with their names, precedences, subjects,
//     rules, distinguisher methods, shares, lendable percentages and
//     queuing parameters; fixed UIDs derived from the names (UID). The
//     API server writes them at start and follows the objects that exist
//     (see apiserver's apf.go, which server-side applies each
//     FlowSchema's Dangling condition as kube-apiserver's controller
//     does): Digest makes a configuration of them
//     (a FlowSchema whose level is missing is dangling and ignored; a
//     missing mandatory object is imagined) and Controller.Reconfigure
//     applies it while requests run: a level keeping its name keeps its
//     queued and executing requests under its new limits (given more
//     queues it adds them, its requests staying in theirs; given fewer it
//     deals new requests into the first ones and drops a surplus queue
//     when a request of it gives its seats back and leaves it empty, as
//     kube-apiserver's queue sets); a removed level
//     admits nothing new, dispatches what it queued and goes once idle;
//     a request classified just before its level went goes to catch-all.
//   - Work estimation (workestimate.go), as kube-apiserver's: a list
//     takes a seat per 100 kB of objects it holds at once
//     (SizeBasedListCostEstimate, its default since 1.34: one object by
//     name; from the watch cache the page, counted for at most 1 MB as
//     the cache streams it; from etcd the page, or with a selector at
//     least half the stored objects), at most 100 seats; and so does a
//     watch that asks for its initial events (sendInitialEvents). With
//     that gate off (Estimator.DisableSizeBasedListCostEstimate) a list
//     takes a seat per 100 objects it goes through (every stored object
//     when the cache serves it; from etcd the page twice, or every object
//     plus the page with a selector; one for a single object), at most
//     10. Either way at most a queuing level's LevelMaxSeats (15% of its
//     nominal seats, no more than nominal/handSize). A write that 10 or
//     more watches may be interested in keeps one final seat per 10 of
//     them for 5 ms after it is done (at most 10, or the level's
//     maximum, seats, for proportionally longer). The stats of stored
//     objects (their number and average stored size, storage.Stats) are
//     polled from storage every minute (ObjectCounts; none known: one
//     seat; stale for 3 minutes: as many objects of 1.5 MB as can be; a
//     size not known: 1.5 MB an object); the watch cache keeps the
//     stored bytes of its objects from the values its etcd list and
//     watch read, an etcd store alone (events) knows only the count.
//     Watches are counted by what they watch (WatchTracker: the
//     resource, its namespace or one object; a pod watch pinned to a
//     node is not counted, as the watch cache indexes those).
//   - Watches hold their seats until their initial events are handed
//     on: the watch cache says so (storage.WatchInitialized) once its
//     watcher has passed them on, a watch straight from etcd as soon as
//     it starts, as kube-apiserver's storage does; a watch that fails,
//     or whose client goes away first, gives them back as it ends.
//     Exec, attach, log, portforward and proxy streams are not
//     classified, as kube-apiserver's.
//   - Classification: the FlowSchema with the lowest matchingPrecedence
//     (ties by name) one of whose rules matches the user (user, group or
//     service account subjects) and the request (resource rules by verb,
//     API group, resource[/subresource] and namespace or cluster scope;
//     non-resource rules by path); none matching: catch-all. A flow is the
//     schema plus the user name (ByUser) or namespace (ByNamespace).
//   - Seats: the server's total (--max-requests-inflight +
//     --max-mutating-requests-inflight) split by shares:
//     ceil(total*shares/sum of shares) per level, its nominal limit;
//     lendable seats round(nominal*lendablePercent/100); borrowable ones
//     round(nominal*borrowingLimitPercent/100), the server's total when
//     unset. A level dispatches within its current limit (a request
//     wider than it alone, see Width); one whose current limit is 0 (it
//     lent every seat) starts nothing from its queues, and its virtual
//     clock stands still, until an adjustment gives it seats (a Reject
//     level admits one request at a time then). Borrowing by demand (borrowing.go):
//     every 10 s, and at every configuration, the nominal limits' sum is
//     re-divided into current limits by the levels' seat demand (seats in
//     use and waiting) over the period: its time-weighted average,
//     deviation and high watermark, the envelope smoothed with a 5-minute
//     half-life, each level between max(nominal-lendable, min(nominal,
//     high watermark)) and nominal+borrowable, in one fair proportion of
//     the targets (Controller.Run's ticker, Dispatcher.AdjustBorrowing).
//     The exempt level's demand counts too (its requests go through the
//     Dispatcher, never held): it borrows what the others lend when its
//     requests need it, as kube-apiserver's.
//   - Width: a request comes with a WorkEstimate (initial seats, final
//     seats, additional latency; the zero value is one seat). It takes
//     the larger of its initial and final seats when it is dispatched,
//     and holds them while it executes and, if it has final seats and
//     additional latency, that long after it finished (from a queue,
//     final seats beyond the level's current limit are capped at it and
//     held proportionally longer, as kube-apiserver; the Controller's
//     timer ends the linger; Controller.Run's end gives lingering seats
//     back at once). A request starts when its seats fit in the current
//     limit; one wider than the limit when none of its level's requests
//     executes (seats lingering after their requests do not count), and
//     then it holds all its seats; from the queues nothing starts while
//     the seats in use reach the limit (kube-apiserver's queue sets). A
//     wide request at the head of the line waits until it may start,
//     and its level dispatches nothing else meanwhile, so that narrow
//     requests cannot starve it.
//   - Queuing: shuffle sharding deals each flow handSize of the level's
//     queues and the request joins the one with the least estimated work
//     waiting; a full queue (queueLengthLimit) rejects it when the
//     level's seats are all taken (429, reason queue-full; with a seat
//     free it takes it anyway, as kube-apiserver's), as does a Reject
//     level (catch-all) without room for it; a request that waits
//     longer than a quarter of what its deadline left it (15 s of the
//     60 s request timeout; at most a minute; the wait limit without a
//     deadline) or whose client goes away leaves its queue with 429
//     (reason time-out or cancelled); leaving starts nothing: what it
//     held back starts at the level's next arrival, finish or adjustment,
//     as in kube-apiserver's queue sets, which each dispatch only their
//     own requests (so here an arrival or finish dispatches at its own
//     level only). The exempt level (system:masters, health probes)
//     is never queued or limited. Retry-After adapts per level between 1
//     and 32 s to the recent rejections, as kube-apiserver's.
//   - Fair order inside a level: fair queuing by virtual time, as
//     kube-apiserver's queue sets (see fairqueue.go): the level's virtual
//     clock advances with real time shared out among its active queues;
//     a request's work is estimated (initial seats times 3 ms, plus final
//     seats times additional latency) and corrected by its real duration
//     when it finishes; the head request with the smallest virtual finish
//     time goes next, also right after an arrival (a newcomer may start
//     ahead of a wide request waiting for seats, if fair queuing picks it
//     first). Every call that changes the Dispatcher passes the time.
//   - Metrics: apiserver_flowcontrol_current_executing_requests,
//     _current_executing_seats,
//     _current_inqueue_requests, _rejected_requests_total{reason},
//     _dispatched_requests_total, _request_wait_duration_seconds
//     {execute}, _work_estimated_seats, _watch_count_samples (of
//     writes), labelled by priority_level and flow_schema;
//     _nominal_limit_seats, _lower_limit_seats, _upper_limit_seats,
//     _current_limit_seats, _target_seats, _demand_seats (a timing
//     histogram of demand over the current limit, counts in nanoseconds,
//     as kube-apiserver's timing ratio histogram),
//     _demand_seats_average, _stdev, _high_watermark and _smoothed,
//     labelled by priority_level; _seat_fair_frac.
//
// Simplified, on purpose:
//   - Virtual time: the virtual clocks are float64 seat-seconds, without
//     upstream's epoch advance (a clock runs at most as fast as its
//     level's limit: at 600 seats it keeps a thousandth of a seat-second
//     of resolution for two centuries).
//   - List work by size: the watch cache's average size is a running
//     sum of the stored bytes its list and watch read, over its object
//     count, where kube-apiserver keeps each key's last seen size (the
//     same number once every key has been seen); a watch asks for
//     initial events only with sendInitialEvents.
//   - A surplus queue is dropped once: a request lingering from it that
//     gives its seats back later does not make kube-apiserver's second
//     removal by a stale index, which takes out another queue or panics
//     (see dropSurplusQueue).
//
// The decisions are pure: Dispatcher (levels, seats, queues) has no
// clock, lock or goroutine, and matching and shuffle sharding are
// functions. Controller is the thin part: a lock around the Dispatcher,
// the wait of a queued request (its own goroutine, woken by a channel),
// the timers of lingering requests (time.AfterFunc: no goroutine until
// one fires), and the metrics. Its only long-lived goroutine is the one
// its caller runs Run in.
package flowcontrol
