"""``grace kb lint``: the planted faults are found, a clean KB gets nothing, bad input gets a clear error."""

from __future__ import annotations

import json

from tests.conftest import run_grace, write

BODY = ("Employees who need this should ask their manager first, then record it in the HR portal within five working "
        "days. The request is approved or refused within a week, and the answer is sent by email with the reasons. ")
CLEAN = [
    ("Leave > Sick leave", "Ten days of paid sick leave a year; a doctor's note is needed from the fourth day. " + BODY),
    ("Travel > Booking flights", "Book flights in the travel portal at least two weeks ahead, economy class. " + BODY),
    ("Pay > Payslips", "Payslips are published on the 25th of each month in the payroll system as PDF files. " + BODY),
    ("Equipment > Laptops", "Each employee receives a laptop on the first day and returns it when leaving. " + BODY),
    ("Security > Passwords", "Passwords need sixteen characters and a second factor through the authenticator app. " + BODY),
]


def articles(path, items):
    lines = [json.dumps({"id": str(i), "title": t, "text": x}) for i, (t, x) in enumerate(items, 1)]
    return write(path, "\n".join(lines) + "\n")


def build(tmp_path, items, name="kb"):
    code, out = run_grace("kb", "build", "--articles", articles(tmp_path / f"{name}.jsonl", items), "--out", tmp_path / name)
    assert code == 0, out
    return tmp_path / name, out


def lint_json(kb, *extra):
    code, out = run_grace("kb", "lint", kb, "--json", *extra)
    assert code == 0, out
    return json.loads(out)


def test_a_clean_kb_has_no_findings_and_the_build_says_so(tmp_path):
    kb, out = build(tmp_path, CLEAN)
    assert "lint: no problems found" in out
    assert lint_json(kb)["findings"] == []
    code, out = run_grace("kb", "lint", kb, "--strict")
    assert code == 0 and "no problems found" in out


def test_planted_faults_are_found_worst_first(tmp_path):
    planted = CLEAN + [
        ("Leave > Sick days", "Ten days of paid sick leave a year; a doctor's note is needed from the fourth day. " + BODY),
        ("Expenses > Receipts", "As mentioned above, receipts must be scanned. " + BODY),
        ("Logging in &amp; Networks", "Connect to the office network with your badge number and the guest code. " + BODY),
        ("Parking", "Ask reception."),
        ("Pay > Payslips", "Bonuses are paid in March with the payslip, after the annual review is signed. " + BODY),
    ]
    kb, out = build(tmp_path, planted)
    assert "1 confusable pair(s)" in out and "grace kb lint" in out
    report = lint_json(kb)
    kinds = {(f["kind"], tuple(f["articles"])) for f in report["findings"]}
    assert ("confusable", ("1", "6")) in kinds
    assert ("not_self_contained", ("7",)) in kinds
    assert ("title_markup", ("8",)) in kinds
    assert ("too_short", ("9",)) in kinds
    assert ("duplicate_title", ("3", "10")) in kinds
    assert len(report["findings"]) == 5 and report["counts"]["confusable"] == 1
    assert report["findings"][0]["kind"] == "confusable"  # near duplicates first: they corrupt the scores
    assert {"kind", "severity", "articles", "message"} <= set(report["findings"][0])
    assert "As mentioned above" in next(f["message"] for f in report["findings"] if f["kind"] == "not_self_contained")
    code, text = run_grace("kb", "lint", kb)
    assert code == 0 and "confusable (1)" in text and "merge" in text
    code, _ = run_grace("kb", "lint", kb, "--strict")
    assert code == 1


def test_lists_cut_from_their_introduction_and_headings_without_body(tmp_path):
    kb, _ = build(tmp_path, CLEAN + [
        ("Onboarding > Steps (part 2 of 2)", "- Collect your badge.\n- Meet your buddy.\n" + BODY),
        ("Onboarding > Checklist", "3. Sign the handbook.\n4. Set up payroll.\n" + BODY),
        ("Onboarding > Contacts", "## Contacts\n### People team"),
        ("Onboarding > Tools", "- Email\n- Chat\n" + BODY),  # a list right under its heading is introduced by it
    ])
    found = {(f["kind"], f["articles"][0]) for f in lint_json(kb)["findings"]}
    assert ("not_self_contained", "6") in found and ("not_self_contained", "7") in found
    assert ("empty", "8") in found and not any(a == "9" for _, a in found)


def test_run_adds_the_pairs_the_models_swap(tmp_path):
    kb, _ = build(tmp_path, CLEAN)
    run = tmp_path / "run"
    rows = [{"question_id": f"q{i}", "model": "m", "outcome": "wrong_citation", "cited_ids": ["2"],
             "expected_citations": ["4"]} for i in range(3)]
    rows.append({"question_id": "q9", "model": "m", "outcome": "correct", "cited_ids": ["1"], "expected_citations": ["1"]})
    write(run / "scores.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    report = lint_json(kb, "--run", run)
    swapped = [f for f in report["findings"] if f["kind"] == "swapped_in_run"]
    assert [f["articles"] for f in swapped] == [["2", "4"]] and "3 time(s)" in swapped[0]["message"]


def test_a_pair_one_title_query_retrieves_says_what_its_percentage_is(tmp_path):
    kb, _ = build(tmp_path, [c for c in CLEAN if "Laptops" not in c[0]] + [
        ("Leaving > Laptop return for contractors",
         "Contractors hand the laptop to IT on their last day and sign the return form. " + BODY),
        ("Contractors > Laptop return and badge",
         "Agency contractors post the laptop back by courier within three days; badges go to reception. " + BODY),
    ])
    [finding] = lint_json(kb)["findings"]
    assert finding["kind"] == "confusable" and finding["articles"] == ["5", "6"]
    message = finding["message"]
    assert "retrieves both (" not in message  # a bare percentage of an unnamed score
    assert ("searching the KB for 5's title 'Laptop return for contractors' gives 6 94% of the retrieval score "
            "5 itself gets") in message
    assert "so a question on this topic may retrieve either" in message and "expected_citations" in message


def test_bad_input_is_a_clear_error(tmp_path):
    code, out = run_grace("kb", "lint", tmp_path / "absent")
    assert code == 2 and "KB folder not found" in out and "Traceback" not in out
    kb, _ = build(tmp_path, CLEAN)
    (tmp_path / "empty-run").mkdir()
    code, out = run_grace("kb", "lint", kb, "--run", tmp_path / "empty-run")
    assert code == 2 and "no scores.jsonl" in out and "Traceback" not in out


def _long_text(chars: int) -> str:
    """Distinct sentences (no near-duplicate of the other articles), cut to ``chars`` characters."""
    text = " ".join(f"Rule {i}: staff at site {i} file form {i * 7} with the facilities desk before day {i % 28 + 1}."
                    for i in range(chars // 60 + 1))
    return text[:chars]


def test_an_imported_kb_without_a_budget_is_checked_against_the_build_default(tmp_path):
    """`grace kb build --articles` records no token budget, so a 200,000-character article used to lint clean."""
    kb, out = build(tmp_path, CLEAN + [("Facilities > Everything", _long_text(200_000)),
                                       ("Facilities > Forms", _long_text(5_000))])
    assert json.loads((kb / "manifest.json").read_text())["max_tokens"] is None
    assert "over the token budget" in out  # the summary `grace kb build` prints
    over = {f["articles"][0]: f for f in lint_json(kb)["findings"] if f["kind"] == "over_budget"}
    assert set(over) == {"6", "7"}
    huge, long = over["6"], over["7"]
    assert huge["severity"] == "error" and long["severity"] == "warning"  # 8x the budget and more is an error
    for f in (huge, long):
        assert "no token budget was recorded" in f["message"] and "800" in f["message"]
        assert "split the article" in f["message"] and "rebuild" in f["message"]
    code, text = run_grace("kb", "lint", kb)
    assert code == 0 and "over_budget (2)" in text
    code, _ = run_grace("kb", "lint", kb, "--strict")
    assert code == 1


ZH_BODY = "如有疑问，请先咨询直属经理，然后在五个工作日内通过人事系统提交申请，审批结果会在一周内通过邮件通知。"
ZH = [
    ("休假 > 年假", "员工每年享有二十天带薪年假，需要提前两周在人事系统中申请，并由直属经理批准。" + ZH_BODY),
    ("休假 > 病假", "员工生病时应在当天通知经理，连续病假超过三天需要提供医生证明。" + ZH_BODY),
    ("报销 > 餐费", "出差期间的餐费可以报销，每天最多一百元，需要上传发票。" + ZH_BODY),
    ("设备 > 笔记本电脑", "每位员工入职第一天领取笔记本电脑，离职时交还信息技术部门。" + ZH_BODY),
]


def test_confusable_chinese_articles_are_found_by_their_character_bigrams(tmp_path):
    """Chinese has no spaces: read as whole runs, two near-duplicate articles shared almost no "word" (0.22)."""
    kb, _ = build(tmp_path, ZH)
    assert [f for f in lint_json(kb)["findings"] if f["kind"] == "confusable"] == []
    planted = ZH + [("休假 > 带薪年假", "员工每年享有二十天带薪年假，需要提前两周在人事系统里申请，并由直属经理审批。" + ZH_BODY)]
    kb, out = build(tmp_path, planted, "planted")
    pairs = [f["articles"] for f in lint_json(kb)["findings"] if f["kind"] == "confusable"]
    assert pairs == [["1", "5"]], out


def test_navigation_left_in_an_article_is_found_in_the_kbs_languages(tmp_path):
    """Before: an article opening on "## Related pages" (its links dropped, the heading left) passed lint."""
    planted = CLEAN + [
        ("Benefits > Health insurance", "## Related pages\n\nPrivate health insurance starts on your first day. " + BODY),
        ("Leave > Annual leave", "Twenty-five days a year.\n\n## See also:\n\nThe leave year runs from January. " + BODY),
        ("Avantages > Mutuelle", "## Voir aussi\n\nLa mutuelle est prise en charge à 60 % par l'entreprise. " + BODY),
        ("Leave > Unpaid leave", "More information\n\nUnpaid leave of up to three months needs HR's consent. " + BODY),
        ("Links", "- [Holidays](https://hr.example/holidays)\n- [Pay dates](https://hr.example/pay)\n"
                  "- [Benefits](https://hr.example/benefits)\n- [Leave](https://hr.example/leave)\n" * 3),
    ]
    kb, _ = build(tmp_path, planted)
    found = {tuple(f["articles"]): f["message"] for f in lint_json(kb)["findings"] if f["kind"] == "navigation"}
    assert set(found) == {("6",), ("7",), ("8",), ("10",)}  # 9: a plain line over text of its own is no navigation
    assert "'Related pages'" in found[("6",)] and "'See also'" in found[("7",)] and "'Voir aussi'" in found[("8",)]
    assert "only links" in found[("10",)]
    assert lint_json(build(tmp_path, CLEAN, "clean")[0])["findings"] == []
