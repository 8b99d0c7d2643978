"""read_mail on messages we build: replies in the six languages as Gmail, Outlook and Apple Mail quote
them, bottom-posted and inline replies, HTML-only mail, reply tokens, forged senders, bounces,
auto-replies, our own mail, and messages made to break a reader."""

from __future__ import annotations

import time
from email.message import EmailMessage

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from avalon.services.email_gateway.reading import IncomingMail, read_mail

NARRATOR = "narrator@example.org"


def mail(body: str = "Approve", *, html: str | None = None, only_html: bool = False,
         sender: str = "Ann <ann@example.org>", to: str = "narrator+abcdefgh12@example.org",
         subject: str = "Re: Avalon", headers: tuple[tuple[str, str], ...] = ()) -> bytes:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    msg["Message-ID"] = "<reply-1@mail.example.org>"
    for name, value in headers:
        msg[name] = value
    if only_html:
        msg.set_content(html or body, subtype="html", charset="utf-8")
    else:
        msg.set_content(body, charset="utf-8")
        if html is not None:
            msg.add_alternative(html, subtype="html", charset="utf-8")
    return msg.as_bytes()


def raw(head: str, body: str = "Approve\n") -> bytes:
    """A message written out by hand: ``head`` lines as they are, then the body."""
    return (head.strip("\n").replace("\n", "\r\n") + "\r\n\r\n" + body.replace("\n", "\r\n")).encode("utf-8")


def read(data: bytes) -> IncomingMail:
    return read_mail(data, NARRATOR)


# -- replies in the six languages, as the big mail programs quote them -----------------------------

THREAD = {  # the narrator's mail being answered, in each language
    "en": "Ann proposes a team: Bors, Gawain.\nApprove or Reject?",
    "fr": "Ann propose une équipe : Bors, Gawain.\nPour ou Contre ?",
    "nl": "Ann stelt een team voor: Bors, Gawain.\nGoedkeuren of Afkeuren?",
    "ru": "Анна предлагает команду: Борс, Гавейн.\nЗа или Против?",
    "vi": "Ann đề xuất đội: Bors, Gawain.\nĐồng ý hay Không đồng ý?",
    "fa": "مریم تیم را پیشنهاد می‌کند: بورس، گاوین.\nموافق یا مخالف؟",
}
APPROVE = {"en": "Approve", "fr": "Pour", "nl": "Goedkeuren", "ru": "За", "vi": "Đồng ý", "fa": "موافق"}
GMAIL = {
    "en": "On Mon, Jun 12, 2023 at 10:00 AM Avalon <narrator@example.org> wrote:",
    "fr": "Le lun. 12 juin 2023 à 10:00, Avalon <narrator@example.org> a écrit :",
    "nl": "Op ma 12 jun 2023 om 10:00 schreef Avalon <narrator@example.org>:",
    "ru": "пн, 12 июн. 2023 г. в 10:00, Avalon <narrator@example.org>:",
    "vi": "Vào Th 2, 12 thg 6, 2023 vào lúc 10:00 Avalon <narrator@example.org> đã viết:",
    "fa": "\u202bدر تاریخ دوشنبه ۱۲ ژوئن ۲۰۲۳ ساعت ۱۰:۰۰ Avalon <narrator@example.org> نوشت:\u202c",
}
APPLE = {  # iPhone Mail: "Sent from my iPhone", then the attribution inside the quote
    "en": ("Sent from my iPhone", "On 12 Jun 2023, at 10:00, Avalon <narrator@example.org> wrote:"),
    "fr": ("Envoyé de mon iPhone", "Le 12 juin 2023 à 10:00, Avalon <narrator@example.org> a écrit :"),
    "nl": ("Verzonden vanaf mijn iPhone",
           "Op 12 jun 2023 om 10:00 heeft Avalon <narrator@example.org> het volgende geschreven:"),
    "ru": ("Отправлено с iPhone", "12 июня 2023 г., в 10:00, Avalon <narrator@example.org> написал(а):"),
    "vi": ("Gửi từ iPhone của tôi", "Vào lúc 10:00, ngày 12 thg 6, 2023, Avalon <narrator@example.org> đã viết:"),
    "fa": ("ارسال شده از iPhone", "در ۱۲ ژوئن ۲۰۲۳، ساعت ۱۰:۰۰، Avalon <narrator@example.org> نوشت:"),
}
OUTLOOK = {  # a sign-off, then the original under a header block, not quoted
    "en": ("Kind regards,\nAnn", "From: Avalon <narrator@example.org>\nSent: Monday, June 12, 2023 10:00 AM\n"
           "To: Ann <ann@example.org>\nSubject: Avalon: the vote"),
    "fr": ("Cordialement,\nAnne", "De : Avalon <narrator@example.org>\nEnvoyé : lundi 12 juin 2023 10:00\n"
           "À : Anne <anne@example.org>\nObjet : Avalon : le vote"),
    "nl": ("Met vriendelijke groet,\nAnneke", "Van: Avalon <narrator@example.org>\nVerzonden: maandag 12 juni 2023 "
           "10:00\nAan: Anneke <anneke@example.org>\nOnderwerp: Avalon: de stemming"),
    "ru": ("С уважением,\nАнна", "От: Avalon <narrator@example.org>\nОтправлено: 12 июня 2023 г. 10:00\n"
           "Кому: Анна <anna@example.org>\nТема: Avalon: голосование"),
    "vi": ("Trân trọng,\nLan", "Từ: Avalon <narrator@example.org>\nĐã gửi: Thứ Hai, ngày 12 tháng 6 năm 2023 10:00\n"
           "Đến: Lan <lan@example.org>\nChủ đề: Avalon: bầu chọn"),
    "fa": ("با تشکر،\nمریم", "از: Avalon <narrator@example.org>\nارسال شده: دوشنبه، ۱۲ ژوئن ۲۰۲۳ ۱۰:۰۰\n"
           "به: مریم <maryam@example.org>\nموضوع: آوالون: رأی‌گیری"),
}


def quoted(text: str) -> str:
    return "\n".join("> " + line for line in text.splitlines())


def layouts(lang: str) -> dict[str, str]:
    thread, command = THREAD[lang], APPROVE[lang]
    sent_from, apple = APPLE[lang]
    sign_off, headers = OUTLOOK[lang]
    return {
        "gmail": f"{command}\n\n{GMAIL[lang]}\n\n{quoted(thread)}\n",
        "apple": f"{command}\n\n{sent_from}\n\n{quoted(apple + chr(10) + chr(10) + thread)}\n",
        "outlook": f"{command}\n\n{sign_off}\n\n{'_' * 32}\n{headers}\n\n{thread}\n",
        "outlook_no_separator": f"{command}\n\n{sign_off}\n\n{headers}\n\n{thread}\n",
    }


@pytest.mark.parametrize("style", ["gmail", "apple", "outlook", "outlook_no_separator"])
@pytest.mark.parametrize("lang", sorted(THREAD))
def test_a_reply_quoted_below_in_each_language_reads_only_the_top(lang: str, style: str):
    got = read(mail(layouts(lang)[style]))
    assert got.text == APPROVE[lang]
    assert got.kind == "person"
    assert got.language == lang


@pytest.mark.parametrize("lang", sorted(THREAD))
def test_a_gmail_reply_sent_as_html_only_reads_only_the_top(lang: str):
    attribution = GMAIL[lang].replace("<", "&lt;").replace(">", "&gt;")
    page = (f'<div dir="auto">{APPROVE[lang]}</div><br><div class="gmail_quote gmail_quote_container">'
            f'<div dir="ltr" class="gmail_attr">{attribution}<br></div><blockquote class="gmail_quote" '
            f'style="margin:0 0 0 .8ex">{THREAD[lang].replace(chr(10), "<br>")}</blockquote></div>')
    assert read(mail(html=page, only_html=True)).text == APPROVE[lang]


def test_an_outlook_html_reply_stops_at_its_reply_header():
    page = ('<html><head><style>p {margin:0}</style></head><body><div>Goedkeuren &amp; snel!</div>'
            '<hr style="display:inline-block;width:98%"><div id="divRplyFwdMsg" dir="ltr"><b>Van:</b> Avalon'
            '<br><b>Verzonden:</b> maandag 12 juni 2023</div><div>Goedkeuren of Afkeuren?</div></body></html>')
    assert read(mail(html=page, only_html=True)).text == "Goedkeuren & snel!"


def test_an_outlook_html_reply_header_ends_the_text_whatever_its_language():
    page = ('<div>Approve</div><div id="appendonsend"></div><hr><div id="divRplyFwdMsg"><b>Kimden:</b> Avalon'
            '<br><b>Gönderildi:</b> 12 Haziran 2023</div><div>Vote now: Approve or Reject?</div>')
    assert read(mail(html=page, only_html=True)).text == "Approve"


def test_what_is_inside_gmails_quote_container_is_never_read_even_without_a_blockquote():
    page = ('<div dir="ltr">Reject</div><div class="gmail_quote"><div>Vote now: Approve or Reject?</div>'
            '<div>Bors, Gawain</div></div><div class="gmail_signature">Ann</div>')
    assert read(mail(html=page, only_html=True)).text == "Reject"


def test_a_thunderbird_html_reply_reads_the_text_above_or_below_the_blockquote():
    cite = ('<div class="moz-cite-prefix">Le 12/06/2023 à 10:00, Avalon a écrit&nbsp;:<br></div>'
            '<blockquote type="cite">Pour ou Contre ?</blockquote>')
    assert read(mail(html=f"<p>Pour</p>{cite}", only_html=True)).text == "Pour"
    assert read(mail(html=f"{cite}<p>Contre</p>", only_html=True)).text == "Contre"


def test_an_apple_mail_html_reply_drops_the_blockquote_and_its_attribution():
    page = ('<div>За</div><div><br><blockquote type="cite"><div>12 июня 2023 г., в 10:00, Avalon '
            '&lt;narrator@example.org&gt; написал(а):</div><br><div>За или Против?</div></blockquote></div>')
    assert read(mail(html=page, only_html=True)).text == "За"


def test_the_text_part_is_preferred_to_the_html_alternative():
    assert read(mail("Reject", html="<p>Approve</p>")).text == "Reject"


# -- where the person's words are -----------------------------------------------------------------

def test_a_top_posted_reply_with_the_whole_thread_quoted_reads_only_the_top():
    body = ("reject\n\nOn Tue, Jun 13, 2023 at 9:00 AM Bors <bors@example.org> wrote:\n\n> approve\n>\n"
            "> On Mon, Jun 12, 2023 at 10:00 AM Avalon <narrator@example.org> wrote:\n>\n>> Approve or Reject?\n"
            ">> -- \n>> Avalon\n")
    assert read(mail(body)).text == "reject"


def test_a_bottom_posted_reply_reads_the_text_below_the_quote():
    body = ("On 12/06/2023 10:00, Avalon wrote:\n> Ann proposes a team: Bors, Gawain.\n> Approve or Reject?\n\n"
            "Reject\n\n-- \nAnn, at home\n")
    assert read(mail(body)).text == "Reject"


def test_an_inline_reply_joins_every_unquoted_answer():
    body = ("On 12/06/2023 10:00, Avalon wrote:\n> Whom do you take on the quest?\nBors and Gawain\n\n"
            "> Do you approve Ann's team?\napprove\n")
    assert read(mail(body)).text == "Bors and Gawain\n\napprove"


def test_a_greeting_above_an_inline_reply_is_kept_with_the_answers():
    body = "Hi,\n\n> Whom do you take?\nBors\n> And the vote?\nreject\n"
    assert read(mail(body)).text == "Hi,\n\nBors\n\nreject"


def test_a_footer_appended_below_the_quote_of_a_top_posted_reply_is_not_read():
    body = ("approve\n\nOn Mon, Jun 12, 2023 at 10:00 AM Avalon <narrator@example.org> wrote:\n\n> Vote?\n\n"
            "This e-mail and any attachment is confidential.\n")
    assert read(mail(body)).text == "approve"


def test_a_forwarded_original_below_its_header_is_not_read():
    body = "approve\n\n---------- Forwarded message ---------\nFrom: Avalon <narrator@example.org>\n\nVote now.\n"
    assert read(mail(body)).text == "approve"


@pytest.mark.parametrize("words", ["invite <bob@example.org>", "new game with bob@example.org, carol@example.net:"])
def test_addresses_written_just_above_a_quote_stay_in_the_text(words: str):
    assert read(mail(f"{words}\n> Ann proposes a team: Bors, Gawain.\n")).text == words


def test_an_attribution_line_in_the_persons_own_words_is_not_taken_for_one():
    body = ("On second thought: approve\n\n"
            "On Mon, Jun 12, 2023 at 10:00 AM Avalon <narrator@example.org> wrote:\n> x\n")
    assert read(mail(body)).text == "On second thought: approve"


@pytest.mark.parametrize("signature", [
    "-- \nAnn Smith\n+31 6 1234 5678", "Sent from my iPhone", "Envoyé de mon iPhone", "Verzonden vanaf mijn iPhone",
    "Отправлено с iPhone", "Gửi từ iPhone của tôi", "ارسال شده از iPhone", "Get Outlook for Android",
    "Thanks,\nAnn", "Met vriendelijke groet,\n\nAnneke de Vries", "С уважением,\nАнна", "Trân trọng,\nLan",
    "با سپاس\nمریم", "Cordialement,\nAnne", "-Ann", "/John",
])
def test_a_signature_below_the_words_is_not_read(signature: str):
    assert read(mail(f"pick Bors and Gawain\n\n{signature}\n")).text == "pick Bors and Gawain"


@pytest.mark.parametrize("team", ["My team:\n- Bors\n- Gawain", "My team:\n-Bors\n-Gawain", "Pick:\n/Bors\n/Gawain"])
def test_the_last_item_of_a_list_of_names_is_not_taken_for_a_signature(team: str):
    assert read(mail(team + "\n")).text == team


def test_a_sign_off_alone_is_still_the_persons_text():
    assert read(mail("Thanks!\n")).text == "Thanks!"


# -- who, where to, which thread --------------------------------------------------------------------

def test_the_sender_the_name_the_subject_and_the_ids_are_read_decoded():
    got = read(mail(sender="=?UTF-8?B?0JDQvdC90LA=?= <Anna@Example.ORG>", subject="=?UTF-8?Q?Re:_Avalon_=E2=9A=94?=",
                    headers=(("In-Reply-To", "<avalon.g1.3.abc@example.org>"),
                             ("References", "<root@example.org> <avalon.g1.3.abc@example.org>"))))
    assert (got.sender, got.sender_name, got.subject) == ("anna@example.org", "Анна", "Re: Avalon ⚔")
    assert got.message_id == "reply-1@mail.example.org"
    assert got.in_reply_to == ("avalon.g1.3.abc@example.org", "root@example.org")


def test_an_unparsable_from_reads_as_no_sender():
    got = read(raw("From: nobody here\nTo: narrator@example.org"))
    assert (got.sender, got.message_id, got.return_path) == (None, None, None)


def test_reply_tokens_come_from_plus_addresses_then_references_in_order_once():
    got = read(mail(to="Narrator+ABCDEFGH12@Example.ORG, narrator+short@example.org, narrator+zzzzzzzz9@evil.example",
                    headers=(("Cc", "narrator+second-token-2@example.org"),
                             ("Delivered-To", "narrator+abcdefgh12@example.org"),
                             ("References", "<root@example.org> <tok.third-token3@example.org> "
                                            "<tok.elsewhere9@other.example> <tok.ABCDEFGH12@example.org>"))))
    assert got.tokens == ("abcdefgh12", "second-token-2", "third-token3")
    assert "narrator+abcdefgh12@example.org" in got.recipients


def test_a_mail_to_the_bare_narrator_address_has_no_token():
    assert read(mail(to="narrator@example.org")).tokens == ()


def test_a_thousand_recipients_are_all_read_and_the_token_among_them_found():
    players = ", ".join(f"player{n:04d}@example.net" for n in range(1000))
    got = read(mail(to=players, headers=(("Cc", "narrator+tokenabc123@example.org"),)))
    assert len(got.recipients) == 1001
    assert got.recipients[0] == "player0000@example.net"
    assert got.tokens == ("tokenabc123",)


@pytest.mark.parametrize("result", ["dmarc=fail (p=reject)", "spf=fail smtp.mailfrom=example.org",
                                    "dkim=fail reason=\"bad signature\""])
def test_a_failure_reported_by_the_receiving_server_is_read(result: str):
    got = read(mail(headers=(("Authentication-Results", f"mx.example.org; {result}"),)))
    assert got.auth_failure == result.split(" ")[0]


@pytest.mark.parametrize("results", [
    "mx.example.org; dkim=pass header.d=example.org; spf=pass; dmarc=pass",
    "mx.example.org; spf=softfail smtp.mailfrom=example.org; dmarc=none",
    "mx.example.org; dkim=fail header.d=list.example; dkim=pass header.d=example.org",
])
def test_passing_or_soft_results_are_no_failure(results: str):
    assert read(mail(headers=(("Authentication-Results", results),))).auth_failure is None


def test_only_the_receiving_servers_results_count_not_those_written_further_down():
    head = ("Authentication-Results: mx.example.org; dmarc=pass\n"
            "Authentication-Results: relay.elsewhere.example; dmarc=fail\n"
            "From: ann@example.org\nTo: narrator@example.org")
    assert read(raw(head)).auth_failure is None
    assert read(raw(head.replace("dmarc=pass", "dmarc=fail; spf=fail"))).auth_failure == "dmarc=fail, spf=fail"


# -- kinds --------------------------------------------------------------------------------------------

DSN = """Return-Path: <>
From: MAILER-DAEMON@mx.example.net (Mail Delivery System)
To: narrator@example.org
Subject: Undelivered Mail Returned to Sender
Auto-Submitted: auto-replied
Content-Type: multipart/report; report-type=delivery-status; boundary="B"
"""
DSN_BODY = """--B
Content-Type: text/plain

I'm sorry to have to inform you that your message could not be delivered.

<bob@example.net>: host mx.example.net said: 550 5.1.1 no such user

--B
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.net

Final-Recipient: rfc822; Bob@Example.NET
Action: failed
Status: 5.1.1

Final-Recipient: rfc822; carol@example.net
Action: delayed
Status: 4.4.1

--B
Content-Type: message/rfc822

From: Avalon <narrator@example.org>
X-Avalon-Narrator: 1
To: bob@example.net

Your turn to vote.
--B--
"""


def test_a_null_sender_delivery_report_is_a_bounce_naming_only_the_failed_address():
    got = read(raw(DSN, DSN_BODY))
    assert (got.kind, got.return_path, got.bounced) == ("bounce", "", ("bob@example.net",))
    assert "could not be delivered" in got.text


def test_a_null_sender_mail_without_a_report_is_a_bounce_read_from_its_text():
    head = "Return-Path: <>\nFrom: postmaster@example.net\nTo: narrator@example.org\nSubject: failure notice"
    got = read(raw(head, "Sorry, we could not deliver to:\n\n  carol@example.net\n\n--- Original message ---\n"
                         "To: dave@example.net\n"))
    assert (got.kind, got.bounced) == ("bounce", ("carol@example.net",))


@pytest.mark.parametrize("header", [("Auto-Submitted", "auto-replied"), ("Auto-Submitted", "auto-generated"),
                                    ("Precedence", "bulk"), ("Precedence", "junk"), ("Precedence", "list"),
                                    ("X-Autoreply", "yes"), ("List-Unsubscribe", "<mailto:leave@example.net>")])
def test_a_mail_marked_automatic_is_an_auto_reply(header: tuple[str, str]):
    assert read(mail("I am away until Monday.", headers=(header,))).kind == "auto_reply"


@pytest.mark.parametrize("subject", ["Out of Office: Avalon", "Automatic reply: Avalon", "Auto: Avalon",
                                     "Abwesenheitsnotiz: Avalon", "Réponse automatique : Avalon",
                                     "Automatisch antwoord: Avalon", "Автоответ: Avalon", "Trả lời tự động: Avalon",
                                     "پاسخ خودکار: Avalon"])
def test_an_out_of_office_subject_makes_an_auto_reply(subject: str):
    assert read(mail("I am away.", subject=subject)).kind == "auto_reply"


def test_a_person_replying_to_an_auto_reply_or_saying_no_to_auto_submitted_is_a_person():
    assert read(mail(subject="Re: Automatic reply: Avalon")).kind == "person"
    assert read(mail(headers=(("Auto-Submitted", "no"),))).kind == "person"


def test_outlooks_auto_response_suppress_alone_is_an_ordinary_mail_but_from_the_null_sender_an_auto_reply():
    assert read(mail(headers=(("X-Auto-Response-Suppress", "All"),))).kind == "person"
    head = "Return-Path: <>\nFrom: ann@example.org\nTo: narrator@example.org\nX-Auto-Response-Suppress: All"
    assert read(raw(head, "I am out of the office.\n")).kind == "auto_reply"


def test_a_read_receipt_is_an_auto_reply():
    head = ('From: ann@example.org\nTo: narrator@example.org\nSubject: Read: Avalon\n'
            'Content-Type: multipart/report; report-type=disposition-notification; boundary="R"')
    body = "--R\nContent-Type: text/plain\n\nYour message was read.\n--R--\n"
    assert read(raw(head, body)).kind == "auto_reply"


@pytest.mark.parametrize("headers,sender", [
    ((("X-Avalon-Narrator", "1"),), "Ann <ann@example.org>"),
    ((), "Avalon <Narrator+bounces@Example.org>"),
    ((("Message-ID", "<avalon.g1.3.0123abcd@example.org>"),), "Ann <ann@example.org>"),
])
def test_our_own_mail_is_recognised(headers, sender: str):
    msg = EmailMessage()
    msg["From"], msg["To"] = sender, "narrator@example.org"
    for name, value in headers:
        msg[name] = value
    msg.set_content("Your turn.")
    assert read(msg.as_bytes()).kind == "own"


def test_a_message_id_like_ours_from_another_domain_is_not_ours():
    assert read(raw("From: ann@example.org\nMessage-ID: <avalon.g1.3.0123@elsewhere.example>")).kind == "person"


# -- language -------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,lang", [
    ("I approve this team", "en"), ("Je vote pour, merci", "fr"), ("Ik ben het niet eens, afkeuren", "nl"),
    ("Против, команда плохая", "ru"), ("Tôi không đồng ý", "vi"), ("من مخالف هستم", "fa"), ("Bors 3 5", None),
])
def test_the_writers_language_is_guessed_from_the_words_or_left_unknown(text: str, lang: str | None):
    assert read(mail(text)).language == lang


# -- messages made to break a reader --------------------------------------------------------------

def test_a_message_with_only_an_attachment_has_no_text():
    msg = EmailMessage()
    msg["From"], msg["To"] = "ann@example.org", "narrator+abcdefgh12@example.org"
    msg.add_attachment(b"%PDF-1.4 approve", maintype="application", subtype="pdf", filename="vote.pdf")
    msg.add_attachment("approve", filename="vote.txt")
    got = read(msg.as_bytes())
    assert (got.kind, got.text, got.sender, got.tokens) == ("person", "", "ann@example.org", ("abcdefgh12",))


@pytest.mark.parametrize("charset,body,text", [
    ("x-no-such-charset", b"approve caf\xc3\xa9", "approve café"),
    ("utf-8", b"r\xe9ject", "r\ufffdject"),
    ("iso-8859-1", b"r\xe9ject", "réject"),
    ("base64", b"approve", "approve"),  # a codec that is not a text encoding
    ('"utf-8\x00"', b"approve", "approve"),
])
def test_a_broken_charset_gives_replacement_characters_not_an_error(charset: str, body: bytes, text: str):
    head = f"From: ann@example.org\r\nContent-Type: text/plain; charset={charset}\r\n\r\n".encode("latin-1")
    assert read(head + body).text == text


def test_raw_eight_bit_and_unknown_encoded_headers_are_read_without_error():
    head = b"From: =?x-unknown?Q?Ann?= <ann@example.org>\r\nSubject: Re: \xc3\xa9quipe \xff\r\n\r\nPour\r\n"
    got = read(head)
    assert got.subject == "Re: équipe \ufffd"
    assert got.sender == "ann@example.org"


def test_an_enormous_body_is_cut_before_it_is_read():
    body = ("approve\n\nOn Mon, Jun 12, 2023, Avalon <narrator@example.org> wrote:\n"
            + "> Approve or Reject?\n" * 150_000)
    got = read(mail(body))  # 3 MB
    assert got.text == "approve"
    filler = read(mail("approve\n" + "more words of mine\n" * 150_000))
    assert filler.text.startswith("approve\nmore words") and len(filler.text) <= 64 * 1024


@pytest.mark.parametrize("line", ["a line of mine, not quoted, not a header\n",
                                  "On 12 Jun 2023 bob@example.org wrote: <x@example.org>\n", "> q\nanswer\n"])
def test_a_body_just_under_the_limit_is_read_from_its_top_in_good_time(line: str):
    body = "approve\n\n" + line * (1_000_000 // len(line))  # just under 1 MB: not cut before parsing
    started = time.monotonic()
    got = read(mail(body))
    assert time.monotonic() - started < 20  # seconds; about one on a laptop for the worst of these
    assert got.text.startswith("approve\n\n" + line.split("\n")[0] if line[0] != ">" else "approve")


GARBAGE = [
    b"",
    b"\x00\xff" * 500,
    b"From: ann@example.org\r\nSubject: no body and no blank line",
    b"Content-Type: multipart/mixed\r\n\r\n--x\r\nContent-Type: text/plain\r\n\r\napprove\r\n",
    b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n'
    + b'--b\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n' * 3000,  # nested 3000 deep
    b"Content-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!not base64@@@\r\n",
    b"X-Long: " + b"a" * 300_000 + b"\r\nFrom: ann@example.org\r\n\r\napprove\r\n",
    b"From: <<<@@@>>>\r\nTo: ,,,,@,<>\r\nReferences: <<<>>>\r\nReturn-Path: <<>\r\n\r\n",
    b"Content-Type: message/rfc822\r\n\r\nContent-Type: multipart/alternative\r\n\r\n\xff\xfe",
    b"Content-Type: text/html\r\n\r\n<div class='gmail_quote'><blockquote><blockquote>" + b"<p>" * 5000,
    b"Authentication-Results: ;;;=fail\r\nContent-Type: multipart/report; report-type\r\n\r\n",
]


@pytest.mark.parametrize("data", GARBAGE, ids=range(len(GARBAGE)))
def test_a_garbage_message_is_read_without_raising(data: bytes):
    got = read(data)
    assert isinstance(got, IncomingMail) and isinstance(got.text, str)
    assert got.kind in ("person", "auto_reply", "bounce", "own")


def test_a_mail_that_fails_to_be_read_reads_as_a_persons_with_no_sender_and_no_text(monkeypatch):
    import avalon.services.email_gateway.reading as reading

    def broken(msg):
        raise RecursionError("too deep")

    monkeypatch.setattr(reading, "body_parts", broken)
    got = read(mail("approve"))
    assert (got.kind, got.text, got.sender, got.tokens, got.message_id) == ("person", "", None, (), None)


def test_control_characters_never_reach_the_text_or_the_subject():
    got = read(raw("From: ann@example.org\nSubject: =?UTF-8?Q?Re:_x=00y?=", "app\x00rove\x07\n"))
    assert (got.text, got.subject) == ("approve", "Re: xy")


@given(st.binary(max_size=3000))
@settings(max_examples=300, deadline=None)
def test_random_bytes_never_make_the_reader_raise(data: bytes):
    got = read_mail(data, NARRATOR)
    assert isinstance(got, IncomingMail) and isinstance(got.text, str)
    assert "\x00" not in got.text + got.subject + got.sender_name


HEADER_NAMES = ["From", "To", "Cc", "Subject", "Message-ID", "References", "In-Reply-To", "Return-Path",
                "Content-Type", "Content-Transfer-Encoding", "Auto-Submitted", "Authentication-Results",
                "Content-Disposition", "X-Failed-Recipients", "Delivered-To"]


@given(st.lists(st.tuples(st.sampled_from(HEADER_NAMES), st.text(max_size=80)), max_size=12),
       st.text(max_size=2000))
@settings(max_examples=300, deadline=None)
def test_messages_with_random_headers_and_bodies_never_make_the_reader_raise(headers, body: str):
    head = "".join(f"{name}: {value}\r\n" for name, value in headers)
    got = read_mail((head + "\r\n" + body).encode("utf-8", "surrogatepass"), NARRATOR)
    assert isinstance(got, IncomingMail) and all(isinstance(t, str) for t in got.tokens)
