"""Sends one plain-text mail with Python's standard library and prints the server's reply
to DATA (the LOOM bridge names the envelope it stored there):

    python3 reference/bridge/peers/send.py --port 2525 --from carol@sender.test \
        --to alice@example.test --subject Lunch --text "Friday?"
"""

import argparse
import smtplib
import sys
from email.message import EmailMessage
from email.utils import formatdate, make_msgid


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=25)
    p.add_argument("--from", dest="sender", required=True)
    p.add_argument("--to", required=True)
    p.add_argument("--subject", default="Hello")
    p.add_argument("--text", required=True)
    a = p.parse_args()
    msg = EmailMessage()
    msg["From"] = a.sender
    msg["To"] = a.to
    msg["Subject"] = a.subject
    msg["Date"] = formatdate(localtime=False)
    msg["Message-ID"] = make_msgid(domain=a.sender.rpartition("@")[2])
    msg.set_content(a.text)
    with smtplib.SMTP(a.host, a.port, timeout=30) as s:
        s.ehlo("client." + a.sender.rpartition("@")[2])
        s.mail(a.sender)
        code, resp = s.rcpt(a.to)
        if code != 250:
            print(f"{code} {resp.decode()}")
            return 1
        code, resp = s.data(msg.as_bytes(policy=msg.policy.clone(linesep="\r\n")))
        print(f"{code} {resp.decode()}")
        return 0 if code == 250 else 1


if __name__ == "__main__":
    sys.exit(main())
