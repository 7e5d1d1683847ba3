package domain

// AuditOutcomes are the outcomes an audit event may record, a fresh slice each call.
func AuditOutcomes() []string {
	return []string{OutcomeGranted, OutcomeDenied, OutcomeNotFound, OutcomeInvalid}
}

// LineItemInactive reports whether a line item of the status is done with: canceled or returned.
func LineItemInactive(status string) bool { return status == "canceled" || status == "returned" }
