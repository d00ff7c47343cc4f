package client

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// A server-sent-events reader (the text/event-stream format of the HTML
// standard), for the API's event streams: lines end in LF, CRLF or CR
// (a CR alone is seen once a LF follows); a blank line dispatches the
// message gathered since the last; "data" lines are joined with LF, "id"
// sets the last event id (kept across messages, as an EventSource keeps
// it for Last-Event-ID), "event" the type; comments (":…") and "retry"
// are read and dropped. A message with no data is not dispatched.

// sseMessage is one dispatched message.
type sseMessage struct {
	id    string // the last event id when it was dispatched
	event string // "" = "message"
	data  string
}

// errStreamEnded: the stream ended (the connection closed) where a
// message could start; a message cut by the end is dropped.
var errStreamEnded = errors.New("the event stream ended")

// maxSSEMessage bounds the data of one message.
const maxSSEMessage = maxAnswer

type sseReader struct {
	r       *bufio.Reader
	pending []string // lines read but not yet handled
	lastID  string
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReaderSize(r, 64<<10)} }

// line returns the next line without its terminator.
func (s *sseReader) line() (string, error) {
	for len(s.pending) == 0 {
		var chunk []byte
		for {
			part, err := s.r.ReadSlice('\n')
			chunk = append(chunk, part...)
			if len(chunk) > maxSSEMessage {
				return "", fmt.Errorf("an event stream line over %d bytes", maxSSEMessage)
			}
			if err == nil {
				break
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if errors.Is(err, io.EOF) {
				if len(chunk) == 0 || !bytes.ContainsRune(chunk, '\r') {
					return "", errStreamEnded // an unterminated last line is no line
				}
				i := bytes.LastIndexByte(chunk, '\r')
				chunk, err = chunk[:i+1], nil // the lines a CR ended
				break
			}
			return "", err
		}
		chunk = bytes.TrimSuffix(bytes.TrimSuffix(chunk, []byte("\n")), []byte("\r"))
		s.pending = strings.Split(string(chunk), "\r")
	}
	l := s.pending[0]
	s.pending = s.pending[1:]
	return l, nil
}

// next returns the next dispatched message.
func (s *sseReader) next() (sseMessage, error) {
	var data strings.Builder
	event, hasData := "", false
	for {
		l, err := s.line()
		if err != nil {
			return sseMessage{}, err
		}
		if l == "" {
			if hasData {
				return sseMessage{id: s.lastID, event: event, data: strings.TrimSuffix(data.String(), "\n")}, nil
			}
			event = ""
			continue
		}
		if l[0] == ':' {
			continue // a comment: a keep-alive
		}
		field, value, found := strings.Cut(l, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch field {
		case "data":
			if data.Len()+len(value) > maxSSEMessage {
				return sseMessage{}, fmt.Errorf("an event stream message over %d bytes", maxSSEMessage)
			}
			data.WriteString(value)
			data.WriteByte('\n')
			hasData = true
		case "event":
			event = value
		case "id":
			if !strings.ContainsRune(value, 0) {
				s.lastID = value
			}
		}
	}
}
