// Package worker feeds queue messages to a handler the way Lambda's SQS
// event source mapping does: receive a batch, call the handler per message,
// delete what succeeded, and leave failures to reappear after the
// visibility timeout. It is the in-process driver of `cairn dev`.
//
// It may import shared/contracts and the standard library.
//
// # Usage
//
//	sig := &worker.Signals{}
//	q := worker.NotifyQueue{Queue: store, Signals: sig} // wake a queue's workers on its Sends
//	p := &worker.Pool{Queue: q, Handle: eng.Handle, Wake: sig.Wait, Queues: []string{"model", "tools", "commit"}}
//	go p.Run(ctx)
package worker
