package audit

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// legacyLine is an event in kube-apiserver's legacy one-line text format
// (--audit-log-format=legacy, and the error log's impacted events):
//
//	<received RFC3339Nano> AUDIT: id="…" stage="…" ip="…" method="<verb>" user="…" groups="…" as="…" asgroups="…" user-agent="…" namespace="…" uri="…" response="<code>"
//
// with <none> for a missing user, groups or namespace, <self> and
// <lookup> when there is no impersonation, <unknown> without source IP
// and <deferred> without a response status.
func legacyLine(ev *Event) string {
	user, groups := "<none>", "<none>"
	if ev.User.Username != "" {
		user = ev.User.Username
		if len(ev.User.Groups) > 0 {
			groups = quotedList(ev.User.Groups)
		}
	}
	as, asGroups := "<self>", "<lookup>"
	if ev.ImpersonatedUser != nil {
		as = ev.ImpersonatedUser.Username
		if ev.ImpersonatedUser.Groups != nil {
			asGroups = quotedList(ev.ImpersonatedUser.Groups)
		}
	}
	namespace := "<none>"
	if ev.ObjectRef != nil && ev.ObjectRef.Namespace != "" {
		namespace = ev.ObjectRef.Namespace
	}
	response := "<deferred>"
	if ev.ResponseStatus != nil {
		response = strconv.Itoa(int(ev.ResponseStatus.Code))
	}
	ip := "<unknown>"
	if len(ev.SourceIPs) > 0 {
		ip = ev.SourceIPs[0]
	}
	return fmt.Sprintf(`%s AUDIT: id=%q stage=%q ip=%q method=%q user=%q groups=%q as=%q asgroups=%q user-agent=%q namespace=%q uri=%q response="%s"`,
		ev.RequestReceivedTimestamp.Format(time.RFC3339Nano), ev.AuditID, ev.Stage, ip, ev.Verb, user, groups,
		as, asGroups, ev.UserAgent, namespace, ev.RequestURI, response)
}

func quotedList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ",")
}
