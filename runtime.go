package usher

// AuditKeep is how many records a store's audit log keeps: the oldest go
// when a change would make more.
const AuditKeep = 10_000

// AuditRecord is one record of the audit log: the change, recorded by the
// admin API (opaque to the store), that made a version of the runtime
// document, or a change appended alone (AppendAudit).
type AuditRecord struct {
	// Version is the runtime document's version the change made, or the
	// number AppendAudit gave the record: the log's order.
	Version int64
	// Data is the record as the admin API wrote it.
	Data []byte
}
