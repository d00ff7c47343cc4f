// cairn console: local times, copy buttons, the fork form and a turn's live
// view. Plain JavaScript, no dependencies; every page works without it but
// for forking and the live stream.
(function () {
  'use strict';

  var live = document.getElementById('live');
  function say(text) { if (live) { live.textContent = ''; live.textContent = text; } }

  // Times: <time datetime="RFC 3339"> in the viewer's time zone.
  var fmt = null;
  try { fmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' }); } catch (e) { fmt = null; }
  function localTimes(root) {
    if (!fmt) return;
    root.querySelectorAll('time[datetime]').forEach(function (t) {
      var iso = t.getAttribute('datetime');
      var d = new Date(iso);
      if (isNaN(d.getTime())) return;
      if (!t.title) t.title = iso;
      t.textContent = fmt.format(d);
    });
  }
  localTimes(document);

  // Copy buttons: button.copy[data-copy].
  function fallbackCopy(text) {
    var ta = document.createElement('textarea');
    ta.value = text;
    ta.setAttribute('readonly', '');
    ta.style.position = 'fixed';
    ta.style.opacity = '0';
    document.body.appendChild(ta);
    ta.select();
    var ok = false;
    try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
    document.body.removeChild(ta);
    return ok;
  }
  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).then(function () { return true; }, function () { return fallbackCopy(text); });
    }
    return Promise.resolve(fallbackCopy(text));
  }
  document.addEventListener('click', function (e) {
    var b = e.target.closest ? e.target.closest('button.copy') : null;
    if (!b) return;
    var text = b.getAttribute('data-copy');
    copy(text).then(function (ok) {
      var was = b.dataset.label || b.textContent;
      b.dataset.label = was;
      b.textContent = ok ? 'Copied' : 'Copy failed';
      say(ok ? 'Copied ' + text : 'Could not copy ' + text);
      setTimeout(function () { b.textContent = was; }, 1500);
    });
  });

  // Forking: button.fork[data-node] opens form#fork under that node.
  var forkForm = document.getElementById('fork');
  var forkOpener = null;
  document.addEventListener('click', function (e) {
    var b = e.target.closest ? e.target.closest('button.fork') : null;
    if (!b || !forkForm) return;
    if (b.getAttribute('aria-disabled') === 'true') {
      say(b.getAttribute('data-reason'));
      alertNear(b, b.getAttribute('data-reason'));
      return;
    }
    var node = b.getAttribute('data-node');
    forkForm.querySelector('input[name=parent]').value = node;
    document.getElementById('fork-node').textContent = node;
    var li = b.closest('li.node');
    var head = li ? li.querySelector('.node-head') : null;
    if (head && head.parentNode) head.parentNode.insertBefore(forkForm, head.nextSibling);
    forkForm.hidden = false;
    forkOpener = b;
    forkForm.querySelector('textarea').focus();
  });
  var forkCancel = document.getElementById('fork-cancel');
  if (forkCancel) forkCancel.addEventListener('click', function () {
    forkForm.hidden = true;
    if (forkOpener) forkOpener.focus();
  });
  function alertNear(el, text) {
    var p = el.parentNode.querySelector('.fork-refused');
    if (!p) {
      p = document.createElement('p');
      p.className = 'fork-refused notice';
      p.setAttribute('role', 'status');
      el.parentNode.appendChild(p);
    }
    p.textContent = text;
  }

  // A turn's live view: events from the console's events route, as
  // server-sent events, or by long-polling where the API cannot stream
  // (it answers 406 behind API Gateway, and EventSource gives up).
  var stream = document.getElementById('stream');
  if (stream && document.body.dataset.done !== 'true') follow(stream);

  function follow(el) {
    var url = el.getAttribute('data-events');
    var after = parseInt(el.getAttribute('data-after'), 10) || 0;
    var discarded = {};
    var phase = document.getElementById('phase');
    var timeline = document.getElementById('timeline');
    var ended = false;
    var types = ['text_delta', 'stream_discarded', 'step', 'tool_started', 'tool_finished', 'tool_denied',
      'tool_interrupted', 'approval_needed', 'approval_decided', 'committed', 'failed', 'cancelled', 'retried', 'repaired'];
    var phaseOf = { step: 'MODEL', tool_started: 'TOOLS', approval_needed: 'TOOLS', committed: 'COMMITTED', failed: 'FAILED', cancelled: 'CANCELLED', retried: 'ACCEPTED' };

    function setPhase(p) {
      if (!p || !phase) return;
      phase.textContent = p;
      phase.setAttribute('data-phase', p);
    }
    function chunk(step, attempt) {
      var sel = '.chunk[data-step="' + step + '"][data-attempt="' + attempt + '"]';
      var c = el.querySelector(sel);
      if (!c) {
        c = document.createElement('div');
        c.className = 'chunk';
        c.setAttribute('data-step', step);
        c.setAttribute('data-attempt', attempt);
        el.appendChild(c);
      }
      return c;
    }
    function addEntry(ev, title) {
      if (!timeline) return;
      var none = timeline.querySelector('li.none');
      if (none) none.remove();
      var li = document.createElement('li');
      li.className = 'ev' + (ev.is_error ? ' is-error' : '');
      li.setAttribute('data-type', ev.type);
      li.setAttribute('data-seq', ev.seq);
      li.setAttribute('data-step', ev.step);
      if (ev.attempt) li.setAttribute('data-attempt', ev.attempt);
      if (ev.tool) li.setAttribute('data-tool', ev.tool);
      var status = { tool_started: 'started', tool_finished: 'finished', tool_denied: 'denied', tool_interrupted: 'interrupted' }[ev.type];
      if (status) li.setAttribute('data-status', status);
      var t = document.createElement('span');
      t.className = 'ev-type';
      t.textContent = ev.type;
      li.appendChild(t);
      li.appendChild(document.createTextNode(' ' + title + ' '));
      var m = document.createElement('span');
      m.className = 'meta';
      m.textContent = '#' + ev.seq;
      li.appendChild(m);
      timeline.appendChild(li);
    }
    function handle(ev) {
      if (!ev || typeof ev.seq !== 'number' || ev.seq <= after) return;
      after = ev.seq;
      var key = ev.step + '/' + (ev.attempt || 0);
      if (ev.type === 'text_delta') {
        if (discarded[key]) return; // an abandoned attempt's text, also when it arrives late
        var c = chunk(ev.step, ev.attempt || 0);
        if (!c.textContent) addEntry(ev, 'Model attempt ' + (ev.attempt || 0) + ' of step ' + ev.step + ' streaming');
        c.appendChild(document.createTextNode(ev.text || ''));
        return;
      }
      if (ev.type === 'stream_discarded') {
        discarded[key] = true;
        var gone = el.querySelector('.chunk[data-step="' + ev.step + '"][data-attempt="' + (ev.attempt || 0) + '"]');
        if (gone) gone.remove();
      }
      var title = ev.type.replace(/_/g, ' ');
      if (ev.tool) title += ': ' + ev.tool;
      if (ev.text && ev.type !== 'tool_started' && ev.type !== 'approval_needed') title += ' — ' + ev.text.slice(0, 200);
      addEntry(ev, title);
      setPhase(phaseOf[ev.type]);
      if (ev.type === 'approval_needed' || ev.type === 'approval_decided') redraw();
      if (ev.type === 'retried') {
        var stale = document.getElementById('stale');
        if (stale) stale.hidden = false;
      }
    }
    // redraw replaces what the server draws from the record — pending
    // approvals, actions, the record, decided approvals, the result —
    // with the page as it is now (one fetch of this page).
    function redraw() {
      fetch(location.href, { headers: { Accept: 'text/html' }, credentials: 'same-origin' })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (!html) return;
          var doc = new DOMParser().parseFromString(html, 'text/html');
          ['turn-state', 'turn-end'].forEach(function (id) {
            var cur = document.getElementById(id), next = doc.getElementById(id);
            if (cur && next) { cur.innerHTML = next.innerHTML; localTimes(cur); }
          });
          document.body.dataset.redrawn = String((parseInt(document.body.dataset.redrawn, 10) || 0) + 1);
        })
        .catch(function () { /* the live view goes on; a reload shows it */ });
    }
    function finish(p) {
      if (ended) return;
      ended = true;
      setPhase(p);
      document.body.dataset.done = 'true';
      var ls = document.getElementById('live-state');
      if (ls) ls.textContent = '(ended)';
      var cancel = document.getElementById('cancel');
      if (cancel) cancel.hidden = true;
      say('The turn ended: ' + p);
      redraw();
    }
    function showError(body) {
      var msg = body && body.error ? body.error.code + ': ' + body.error.message : 'the live view stopped';
      var ls = document.getElementById('live-state');
      if (ls) ls.textContent = '(not live: ' + msg + ')';
    }

    function poll(delay) {
      setTimeout(function () {
        fetch(url + '?after=' + after + '&wait=20', { headers: { Accept: 'application/json' }, credentials: 'same-origin' })
          .then(function (r) { return r.json().then(function (b) { return { status: r.status, body: b }; }); })
          .then(function (res) {
            if (res.status !== 200) {
              showError(res.body);
              if (res.status >= 500) poll(5000);
              return;
            }
            (res.body.events || []).forEach(handle);
            if (typeof res.body.next === 'number' && res.body.next > after) after = res.body.next;
            setPhase(res.body.phase);
            if (res.body.done) finish(res.body.phase); else poll(0);
          })
          .catch(function () { poll(3000); });
      }, delay);
    }

    if (!window.EventSource) { poll(0); return; }
    var es = new EventSource(url + '?after=' + after);
    types.forEach(function (t) {
      es.addEventListener(t, function (m) {
        try { handle(JSON.parse(m.data)); } catch (e) { /* not an event */ }
      });
    });
    es.addEventListener('end', function (m) {
      es.close();
      var d = {};
      try { d = JSON.parse(m.data); } catch (e) { d = {}; }
      finish(d.phase);
    });
    es.addEventListener('error', function (m) {
      if (m.data) { // the API's own error message, then the stream ends
        es.close();
        try { showError(JSON.parse(m.data)); } catch (e) { showError(null); }
        return;
      }
      if (es.readyState === EventSource.CLOSED && !ended) poll(0); // refused (406 where responses are buffered): long-poll
    });
  }
})();
