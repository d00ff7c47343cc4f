// Package journaltest is the conformance suite for contracts.JournalStore.
// Every journal adapter runs it.
//
// It may import shared/contracts, shared/testkit/conformance/internal/unique
// and the standard library (testing included).
//
// The suite checks each point of the JournalStore contract: create-if-absent
// sessions (ErrExists), idempotent submission creation on (session,
// idempotency key), conditional updates on version (the winner stores
// expected+1, a stale writer gets ErrConflict and changes nothing, an absent
// record is ErrNotFound), listing order, the unfinished (repair) index,
// create-if-absent tool records with first-result-wins, exact timestamp
// round-trips, and racing writers of which exactly one wins. Ids are unique
// per test, so the suite may run against a shared real backend.
//
// # Usage
//
//	func TestJournalConformance(t *testing.T) {
//		journaltest.Run(t, func(t *testing.T) contracts.JournalStore {
//			s, err := sqlite.Open(filepath.Join(t.TempDir(), "cairn.db"), sqlite.Options{})
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
package journaltest
