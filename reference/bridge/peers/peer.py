"""Independent mail peers for the LOOM bridge's end-to-end test (issue 32).

    peer.py send   --host H --port P --mail-from A --to B --domain D --selector S --key PEM
                   --message-id ID [--body TEXT]
        Builds a message with Python's email package, DKIM-signs it with dkimpy (rsa-sha256)
        and delivers it with smtplib. Prints the server's reply to DATA.
    peer.py sink   --port P --out DIR
        An aiosmtpd server on 127.0.0.1:P writing each message to DIR/N.eml (and its
        envelope to DIR/N.json). Prints "ready" when it listens; runs until killed.
    peer.py verify --file F --record NAME=TXT [--record ...]
        Verifies F's DKIM signature with dkimpy against the given TXT records (no real DNS).
        Exit 0 when it verifies, 1 otherwise.
"""

import argparse
import json
import os
import smtplib
import sys
import time
from email.message import EmailMessage
from email.utils import formatdate

import dkim


def send(a):
    msg = EmailMessage()
    msg["From"] = f"Carol C <{a.mail_from}>"
    msg["To"] = a.to
    msg["Subject"] = "Hello from a real mail client"
    msg["Message-ID"] = f"<{a.message_id}>"
    msg["Date"] = formatdate(localtime=False)
    msg.set_content(a.body)
    raw = msg.as_bytes(policy=msg.policy.clone(linesep="\r\n"))
    with open(a.key, "rb") as f:
        key = f.read()
    sig = dkim.sign(raw, a.selector.encode(), a.domain.encode(), key,
                    include_headers=[b"from", b"to", b"subject", b"message-id", b"date"])
    raw = sig + raw
    with smtplib.SMTP(a.host, a.port, timeout=30) as s:
        s.ehlo("client.b.test")
        s.mail(a.mail_from)
        code, resp = s.rcpt(a.to)
        if code != 250:
            print(f"RCPT {code} {resp.decode()}")
            return 1
        code, resp = s.data(raw)
        print(f"{code} {resp.decode()}")
        return 0 if code == 250 else 1


def sink(a):
    from aiosmtpd.controller import Controller

    os.makedirs(a.out, exist_ok=True)

    class Handler:
        n = 0

        async def handle_DATA(self, server, session, envelope):
            Handler.n += 1
            base = os.path.join(a.out, str(Handler.n))
            with open(base + ".eml.tmp", "wb") as f:
                f.write(envelope.original_content or envelope.content)
            with open(base + ".json", "w") as f:
                json.dump({"mail_from": envelope.mail_from, "rcpt_tos": envelope.rcpt_tos}, f)
            os.rename(base + ".eml.tmp", base + ".eml")
            return "250 OK stored"

    c = Controller(Handler(), hostname="127.0.0.1", port=a.port)
    c.start()
    print("ready", flush=True)
    try:
        while True:
            time.sleep(3600)
    finally:
        c.stop()


def verify(a):
    records = {}
    for r in a.record:
        name, _, txt = r.partition("=")
        records[name.rstrip(".").lower()] = txt.encode()

    def dnsfunc(name, timeout=5):
        return records.get(name.decode().rstrip(".").lower(), b"")

    with open(a.file, "rb") as f:
        raw = f.read()
    ok = dkim.verify(raw, dnsfunc=dnsfunc)
    print("dkim=pass" if ok else "dkim=fail")
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send")
    for flag in ["--host", "--mail-from", "--to", "--domain", "--selector", "--key", "--message-id"]:
        s.add_argument(flag, required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--body", default="Hello LOOM.")
    k = sub.add_parser("sink")
    k.add_argument("--port", type=int, required=True)
    k.add_argument("--out", required=True)
    v = sub.add_parser("verify")
    v.add_argument("--file", required=True)
    v.add_argument("--record", action="append", default=[])
    a = p.parse_args()
    return {"send": send, "sink": sink, "verify": verify}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
