package client

import (
	"errors"
	"strings"
	"testing"
)

// The event stream parser follows the format: LF, CRLF and CR line ends,
// data lines joined, the space after the colon optional, comments and
// unknown fields dropped, the last id kept across messages, a message
// without data not dispatched, a message cut by the end dropped.
func TestSSEReader(t *testing.T) {
	in := "retry: 1000\n\n" +
		": keep-alive\n\n" +
		"id: 7\nevent: step\ndata: {\"seq\":7}\n\n" +
		"id:8\r\nevent:text_delta\r\ndata:line one\r\ndata: line two\r\n\r\n" +
		"event: end\rdata: {}\r\r" +
		"event: nothing\nid: 9\n\n" +
		"data\n\n" +
		"unknown: x\ndata: y\n\n" +
		"event: cut\ndata: never dispatched\n"
	want := []sseMessage{
		{id: "7", event: "step", data: `{"seq":7}`},
		{id: "8", event: "text_delta", data: "line one\nline two"},
		{id: "8", event: "end", data: "{}"},
		{id: "9", event: "", data: ""},
		{id: "9", event: "", data: "y"},
	}
	r := newSSEReader(strings.NewReader(in))
	for i, w := range want {
		got, err := r.next()
		if err != nil || got != w {
			t.Fatalf("message %d: %+v, %v; want %+v", i, got, err, w)
		}
	}
	if m, err := r.next(); !errors.Is(err, errStreamEnded) {
		t.Fatalf("after the last message: %+v, %v; want errStreamEnded", m, err)
	}
}

// A line longer than the reader's buffer is read whole.
func TestSSEReaderLongLine(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	r := newSSEReader(strings.NewReader("data: " + long + "\n\n"))
	if m, err := r.next(); err != nil || m.data != long {
		t.Fatalf("%d bytes, %v", len(m.data), err)
	}
}
