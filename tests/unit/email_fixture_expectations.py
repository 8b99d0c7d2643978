"""Where the person's own new text is in each real-world reply of ../shared/email_fixtures/raw.

Our annotations, made by reading each fixture by eye (the fixtures themselves are not copied here):
for every file, the first and the last words of the person's fresh text, as they appear in the part
read_mail reads (the decoded text/plain part; for the HTML-only fixtures, the HTML source). The
span from the first occurrence of ``first`` to the end of the first occurrence of ``last`` after
it is the person's text; test_email_fixtures.py replaces it with a command.

What the span leaves out on purpose, because read_mail must take it away itself: sign-offs made of
a closing formula and a name ("Regards,\\n\\nChristopher Edwards", "Mvh,\\nPerson A\\n070-0000000",
"Thanks,\\nAlex"), a name signed with a dash or slash ("-Abhishek Kona", "/John", "//Jef"), "-- "
signatures and "Sent from my ..." lines. A bare name with no formula ("Joe XXX" in the Yahoo
share-block) is inside the span: nothing tells it from a word the person wrote.

Layouts worth knowing: talon__thunderbird and trimmer__embedded_email_french_2 are bottom-posted
(the text is below the quote); github__pathological, trimmer__embedded_email_dutch_2,
trimmer__embedded_email_french_1 and talon__android have the attribution glued to the text with no
blank line; trimmer__dual_embedded, trimmer__embedded_email_10, trimmer__embedded_email_norwegian
and zapier__email_gmail have an original that is not ``>`` quoted; mailparser__email_3_1 has older
messages of a forwarded thread (David, "Fourth reply") below the quote of a top-posted reply.
No fixture is interleaved (inline replies); the unit tests cover that rule.

Every reply and HTML-only fixture can carry a command in place of the person's text, so
``CANNOT_CARRY`` is empty; a fixture listed there (file -> reason) gets the other checks only.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fresh:
    first: str
    last: str = ""  # '' when the text is ``first`` alone

    @property
    def end(self) -> str:
        return self.last or self.first


F = Fresh

#: file -> the person's text in the part read_mail reads
FRESH: dict[str, Fresh] = {
    "github__email_1_3.txt": F("Oh thanks.", "Having the function would be great."),
    "github__email_1_4.txt": F("Awesome! I haven't had another problem with it."),
    "github__email_1_6.txt": F("I get proper rendering as well."),
    "github__email_1_7.txt": F(":+1:"),
    "github__greedy_on.txt": F("On your remote host you can run:", "the tunnel is not working."),
    "github__pathological.txt": F("I think you're onto something.", "get back to a computer."),
    "mailparser__begins_with_signature.txt": F("Thank you, Sonya Johnson.", "hope you can join."),
    "mailparser__email_3_1.txt": F("First reply.", "nothing too hard here!"),
    "mailparser__email_danish_1.txt": F("Hej Peter,", "Det lyder godt."),
    "mailparser__email_danish_2.txt": F("Hej Hanne,", "Jeg har modtaget filerne."),
    "mailparser__email_danish_4.txt": F("Hej,", "Svar."),
    "mailparser__email_ja_1_2.txt": F("田中様", "以上、よろしくお願いいたします"),
    "mailparser__email_nl_1_2.txt": F("Outlook met een antwoord"),
    "mailparser__email_sv_anon_1.txt": F("Hej", "flexibel fram till kl 15 idag."),
    "mailparser__email_swedish_1.txt": F("Hej Person A,", "vilket företag det gäller?"),
    "mailparser__email_swedish_2.txt": F("Hello Anna,", "will update you once I am available"),
    "talon__android.eml": F("Hello"),
    "talon__aol.eml": F("Hello"),
    "talon__apple_mail.eml": F("Hello"),
    "talon__apple_mail_2.eml": F("Hello"),
    "talon__comcast.eml": F("Hello"),
    "talon__gmail.eml": F("Hello"),
    "talon__hotmail.eml": F("Hello"),
    "talon__iphone.eml": F("Hello"),
    "talon__outlook.eml": F("Hello"),
    "talon__reply-quotations-share-block.eml": F("Hi Katharine.", "Joe XXX"),
    "talon__sparrow.eml": F("Hello"),
    "talon__text_quotations_test__french_from_block.txt": F("Lorem ipsum"),
    "talon__text_quotations_test__french_multiline_from_block.txt": F("Lorem ipsum"),
    "talon__text_quotations_test__german_from_block.txt": F("Allo! Follow up MIME!"),
    "talon__text_quotations_test__polish_from_block.txt": F("Lorem ipsum"),
    "talon__text_quotations_test__vietnamese_from_block.txt": F("Hello"),
    "talon__thunderbird.eml": F("Hello"),
    "talon__yahoo.eml": F("Hello"),
    "trimmer__dual_embedded.txt": F("This is the 3rd email."),
    "trimmer__email_headers_1.txt": F("This is a reply from Outlook!"),
    "trimmer__email_headers_2.txt": F("This is a reply from Outlook!"),
    "trimmer__email_headers_4.txt": F("test"),
    "trimmer__email_headers_5.txt": F("Hi Erlend,", "add value to our communities."),
    "trimmer__embedded_email_10.txt": F("Thank you."),
    "trimmer__embedded_email_13.txt": F("yes we're fine"),
    "trimmer__embedded_email_14.txt": F("I just saw the standard plan", "has the slack integration."),
    "trimmer__embedded_email_2.txt": F("I have checked the available", "can you please tell the endpoints"),
    "trimmer__embedded_email_4.txt": F("If I do exactly that,", "the page."),
    "trimmer__embedded_email_chinese.txt": F("Hi Erlend Sogge Heggen,", "Thank you for your reply."),
    "trimmer__embedded_email_dutch_1.txt": F("Nice of you to pick it up!", "Would be great."),
    "trimmer__embedded_email_dutch_2.txt": F("The adblocker idea", "I will let you know then..."),
    "trimmer__embedded_email_french_1.txt": F("C'est super !"),
    "trimmer__embedded_email_french_2.txt": F("Thanks for your answer."),
    "trimmer__embedded_email_german_1.txt": F("alright, no big deal", "to better support I18N anyway."),
    "trimmer__embedded_email_german_2.txt": F("Hey:)"),
    "trimmer__embedded_email_german_3.txt": F("Gruß Discourse"),
    "trimmer__embedded_email_german_4.txt": F("Hi there! I am replying from my german Google Inbox."),
    "trimmer__embedded_email_german_5.txt": F("Okay. Will give it a whirl."),
    "trimmer__embedded_email_german_6.txt": F("Ich habe konzeptionell", "Bin gleichzeitig robust, sofern nötig."),
    "trimmer__embedded_email_italian.txt": F("Ok, will do.", "this is a reply from a webmail client."),
    "trimmer__embedded_email_norwegian.txt": F("Thanx :-)"),
    "trimmer__embedded_email_polish_1.txt": F("Oh, I've forgot to add. MIT"),
    "trimmer__embedded_email_polish_2.txt": F("Hi Neil,", "Thanks for prompt response!"),
    "trimmer__embedded_email_portuguese.txt": F("Olá,", "Qualquer dúvida estamos ai."),
    "trimmer__embedded_email_russian_1.txt": F("Why don't you override particular strings with JS?"),
    "trimmer__embedded_email_russian_2.txt": F("Yes."),
    "trimmer__embedded_email_spanish_1.txt": F("I've configured Twitter", "see that error in the\nlogs."),
    "trimmer__embedded_email_spanish_2.txt": F("Igual que siempre", "sin nada raro :/"),
    "trimmer__embedded_email_swedish.txt": F("Hi everyone!", "It was a pleasure to support this event."),
    "trimmer__embedded_email_ukrainian.txt": F("Спасибо еще раз."),
    "watchdog__quote_and_pl_characters.eml": F("Odpowiedź z polskimi znakami:", "🤔🤣"),
    "zapier__email_gmail.txt": F("This is a test for inbox replying to a github message."),
    "zapier__email_headers_no_delimiter.txt": F("And another reply!"),
    # HTML-only fixtures: spans of the HTML source
    "talon__OLK_SRC_BODY_SECTION.html": F("Reply"),
    "talon__html_gmail.html": F("Hi. I am fine."),
    "talon__html_hotmail.html": F("Hi. I am fine."),
    "talon__html_mail_ru.html": F("Hi. I am fine."),
    "talon__html_ms_outlook_2003.html": F("Hi. I am fine."),
    "talon__html_ms_outlook_2007.html": F("Hi. I am fine."),
    "talon__html_ms_outlook_2010.html": F("Hi. I am fine."),
    "talon__html_thunderbird.html": F("Hi. I am fine."),
    "talon__html_windows_mail.html": F("Hi. I am fine."),
    "talon__html_yandex_ru.html": F("Hi. I am fine."),
}

#: .eml replies that also carry a text/html alternative: the person's text in its HTML (decoded)
#: source, for reading the same reply with its text/plain part taken out
HTML_TWINS: dict[str, Fresh] = {
    "talon__android.eml": F("Hello"),
    "talon__aol.eml": F("Hello"),
    "talon__comcast.eml": F("Hello"),
    "talon__gmail.eml": F("Hello"),
    "talon__hotmail.eml": F("Hello"),
    "talon__outlook.eml": F("Allo! Follow up MIME!"),
    "talon__reply-quotations-share-block.eml": F("Hi Katharine.", "Jhon Doe"),
    "talon__sparrow.eml": F("Hello"),
    "watchdog__quote_and_pl_characters.eml": F("Odpowiedź z polskimi", "🤔🤣"),
}

#: file -> why it cannot carry a command in place of the person's text (none so far)
CANNOT_CARRY: dict[str, str] = {}

#: bounce -> the failed address its report names; () when it names none (a delay warning)
BOUNCED: dict[str, tuple[str, ...]] = {
    "flanker__bounce_gmail-invalid-address.eml": ("awfawfawfawfawfaw@someserverhere.com",),
    "flanker__bounce_mailbox-full.eml": ("user@aol.com",),
    "flanker__bounce_no-mx.eml": (),  # Action: delayed, "THIS IS A WARNING ONLY"
    "flanker__bounce_zed.eml": ("asdfasdfasdfasdfasdfasdfewrqertrtyrthsfgdfgadfqeadvxzvz@gmail.com",),
    "sisimai__lhost-exim-01.eml": ("kijitora@example.ed.jp",),
    "sisimai__lhost-mailru-01.eml": ("kijitora@example.jp",),
    "sisimai__lhost-office365-01.eml": ("kijitora@example.com",),  # no delivery-status part: from the text
}
