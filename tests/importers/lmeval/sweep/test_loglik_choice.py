"""Registry multiple-choice tasks scored by log-likelihood, unchanged but for their data (a few documents in each
task's real schema): ``arc_easy``/``arc_challenge`` (Jinja choices of a nested record, letter and digit labels),
``hellaswag`` (its process_docs), ``winogrande`` (partial evaluation: several contexts, one continuation),
``sciq``, ``openbookqa``, ``copa`` and ``logiqa`` (function prompts), ``boolq``, ``xnli_de`` (empty context,
German), ``mmlu_abstract_algebra`` (description, 3 first_n shots from ``dev``) and ``mathqa`` (function choices),
each run by lm_eval's hf backend and by assay on the same tiny model (whose 128-token window truncates the longer
prompts from the left on both sides). Choices are written ``|``-separated below and stored as the lists the datasets
hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.importers.lmeval.parity import (
    FLOAT32,
    assay_run,
    assert_parity,
    inside,
    lm_eval_loglik,
    loglik_requests,
    registry,
    registry_copy,
)

pytest.importorskip("lm_eval", reason="lm-eval is not installed")
pytest.importorskip("accelerate", reason="lm-eval's hf backend needs accelerate")


def _arc(*rows: tuple[str, str, str, str, str]) -> list[dict[str, Any]]:
    """allenai/ai2_arc: ``choices`` a record of parallel ``text``/``label`` lists; labels are letters, or digits in
    some questions; a few questions have 3 or 5 choices."""
    return [
        {"id": i, "question": q, "choices": {"text": c.split("|"), "label": list(labels)}, "answerKey": key}
        for i, q, c, labels, key in rows
    ]


ARC_EASY = _arc(
    ("Mercury_7175875", "Which tool is best for measuring the mass of a rock?",
     "a ruler|a balance|a thermometer|a graduated cylinder", "ABCD", "B"),
    ("MCAS_2004_5_12", "Which of these is a renewable resource?", "coal|natural gas|wind|oil", "ABCD", "C"),
    ("NYSEDREGENTS_2010_4_7", "What is the main source of energy for Earth's water cycle?",
     "the Moon|the Sun|wind|soil", "1234", "2"),
    ("Mercury_SC_401", "Water freezes at what temperature on the Celsius scale?", "0 °C|32 °C|100 °C", "ABC", "A"),
    ("ACTAAP_2013_7_3", "Which body part pumps blood through the body?", "lungs|stomach|heart|brain", "ABCD", "C"),
    ("Mercury_7123456", "A student stirs salt into water and the salt seems to disappear. What has formed?",
     "a solution|a gas|a solid|an element|a metal", "ABCDE", "A"),
)  # fmt: skip
ARC_CHALLENGE = _arc(
    ("Mercury_SC_415702", "George wants to warm his hands quickly by rubbing them. Which skin surface will produce "
     "the most heat?", "dry palms|wet palms|palms covered with oil|palms covered with lotion", "ABCD", "A"),
    ("Mercury_7220990", "Which factor will most likely cause a person to develop a fever?",
     "a leg muscle relaxing after exercise|a bacterial population in the bloodstream|several viral particles on "
     "the skin|carbohydrates being digested in the stomach", "ABCD", "B"),
    ("NYSEDREGENTS_2008_8_22", "Which process in an apple tree primarily results from cell division?",
     "growth|photosynthesis|gas exchange|waste removal", "1234", "1"),
    ("Mercury_7205135", "A scientist in Zürich measures a current of 2 A through a 3 Ω resistor. What is the voltage?",
     "1.5 V|5 V|6 V|0.67 V", "ABCD", "C"),
    ("Mercury_SC_LBS10610", "Why is the ozone layer important to life on Earth?",
     "It keeps Earth warm.|It absorbs ultraviolet light.|It makes rain.", "ABC", "B"),
    ("MDSA_2009_5_16", "Which characteristic is inherited rather than learned?",
     "speaking Français|eye color|riding a bike|playing piano", "ABCD", "B"),
)  # fmt: skip


def _hellaswag(*rows: tuple[int, str, str, str, str, str, str]) -> list[dict[str, Any]]:
    """Rowan/hellaswag: ``ctx`` is ``ctx_a`` and ``ctx_b`` joined; ``label`` a string; WikiHow contexts and endings
    keep their ``[header]``/``[title]``/``[step]`` markers (which the task's process_docs removes)."""
    return [
        {"ind": ind, "activity_label": label, "ctx_a": a, "ctx_b": b, "ctx": f"{a} {b}".strip(),
         "endings": endings.split("|"), "source_id": source, "split": "val",
         "split_type": "zeroshot" if ind % 2 else "indomain", "label": gold}
        for ind, label, a, b, endings, source, gold in rows
    ]  # fmt: skip


HELLASWAG = _hellaswag(
    (24, "Roof shingle removal", "A man is sitting on a roof.", "he", "is using wrap to wrap a pair of skis.|is "
     "ripping level tiles off.|is holding a rubik's cube.|starts pulling up roofing on a roof.",
     "activitynet~v_-JhWjGDPHMY", "3"),
    (92, "Clean and jerk", "A lady walks to a barbell. She bends down and grabs the pole.", "the lady",
     "swings and lands in her arms.|pulls the barbell forward.|pulls a rope attached to the barbell.|stands and "
     "lifts the weight over her head.", "activitynet~v_-lJS58hyo1c", "3"),
    (106, "Canoeing", "Two women and a child are shown in a canoe while a man pulls the canoe through the water.",
     "the child and a different man", "are then shown paddling down a river in a boat.|are driving the canoe, they "
     "go down the river.|sit in a canoe while the man paddles.|walking go down the rapids.",
     "activitynet~v_-xQvJmC2jhk", "2"),
    (4111, "Food and Entertaining", "[header] How to make crème brûlée [title] Heat the cream. [step] Pour the "
     "cream into a saucepan.", "", "[substeps] Warm it over medium heat until it steams.|Throw the saucepan into "
     "the oven at 500 °C.|[title] Freeze the cream overnight. [step] Then serve it.|Add a cup of salt and stir.",
     "wikihow~6731", "0"),
    (4502, "Personal Care and Style", "[header] How to braid hair [title] Brush your hair. [step] Remove any "
     "tangles before you begin.", "divide", "the hair into three equal sections.|your hair by zero.|the brush into "
     "pieces.|[title] a cake in half.", "wikihow~7433", "0"),
    (321, "Playing violin", "A young girl stands in a room holding a violin.", "she", "begins to play the violin "
     "with a bow.|throws the violin out of the window.|eats the bow.|paints the violin blue.",
     "activitynet~v_0ZiHk7TaAfE", "0"),
)  # fmt: skip

WINOGRANDE = [
    {"sentence": s, "option1": o1, "option2": o2, "answer": a}
    for s, o1, o2, a in [
        ("Sarah was a much better surgeon than Maria so _ always got the harder cases.", "Sarah", "Maria", "1"),
        ("The trophy doesn't fit into the brown suitcase because the _ is too large.", "trophy", "suitcase", "1"),
        ("I poured water from the bottle into the cup until the _ was full.", "bottle", "cup", "2"),
        ("José couldn't lift the crate but Zoë could, because _ was weaker.", "José", "Zoë", "1"),
        ("The cake was moister than the bread because the _ had more butter in it.", "cake", "bread", "1"),
        ("Kevin preferred tea over coffee, since the _ always made him jittery.", "tea", "coffee", "2"),
    ]
]

SCIQ = [
    {"question": q, "distractor3": d3, "distractor1": d1, "distractor2": d2, "correct_answer": a, "support": s}
    for q, d1, d2, d3, a, s in [
        ("What type of organism is commonly used in preparation of foods such as cheese and yogurt?", "protozoa",
         "gymnosperms", "viruses", "mesophilic organisms", "Mesophiles grow best in moderate temperature, typically "
         "between 25°C and 40°C. They are used in making cheese, yogurt, beer and wine."),
        ("What phenomenon makes global winds blow northeast to southwest in the northern hemisphere?", "muon effect",
         "centrifugal effect", "tropical effect", "coriolis effect",
         "  Without the Coriolis effect the global winds would blow north to south or south to north."),
        ("Changes from a less-ordered state to a more-ordered state are?", "unbalanced", "reactive", "endothermic",
         "exothermic", ""),
        ("What is the least dangerous radioactive decay?", "beta decay", "gamma decay", "zeta decay", "alpha decay",
         "All radioactive decay is dangerous to living things, but alpha decay is the least dangerous."),
        ("Kilauea in Hawaii is the world's most continuously active what?", "geyser", "canyon", "mountain",
         "volcano", ""),
        ("What is the SI unit of electrical resistance?", "volt", "watt", "ampere", "ohm (Ω)",
         "Resistance is measured in ohms (Ω), named after Georg Simon Ohm.\n"),
    ]
]  # fmt: skip

OPENBOOKQA = [
    {"id": i, "question_stem": q, "choices": {"text": c.split("|"), "label": ["A", "B", "C", "D"]}, "answerKey": k}
    for i, q, c, k in [
        ("7-980", "The sun is responsible for", "puppies learning new tricks|children growing up and getting "
         "old|flowers wilting in a vase|plants sprouting, blooming and wilting", "D"),
        ("7-584", "When standing miles away from Mount Rushmore", "the mountains seem very close|the mountains are "
         "boring|the mountains look the same as from up close|the mountains seem smaller than in photographs", "D"),
        ("7-870", "When food is reduced in the stomach", "the mind needs time to digest|take a second to digest "
         "what I said|nutrients are being deconstructed|reader's digest is a body of works", "C"),
        ("7-321", "Stars are", "warm lights that float|made out of nitrate|great balls of gas burning billions of "
         "miles away|lights in the sky", "C"),
        ("9-732", "A café owner in Málaga wants ice to melt faster; she should", "put it in a freezer|leave it in "
         "the sun|wrap it in wool|add more ice", " B"),  # answerKey.lstrip() in the task: some keys are padded
        ("8-376", "An example of conservation is avoiding the use of", "gasoline|air|snow|clothes", "A"),
    ]
]  # fmt: skip

COPA = [
    {"premise": p, "choice1": c1, "choice2": c2, "question": q, "idx": idx, "label": label}
    for idx, (p, c1, c2, q, label) in enumerate(
        [
            ("My body cast a shadow over the grass.", "The sun was rising.", "The grass was cut.", "cause", 0),
            ("The woman tolerated her friend's difficult behavior.", "The woman knew her friend was going through "
             "a hard time.", "The woman felt that her friend took advantage of her kindness.", "cause", 0),
            ("The women met for coffee.", "The cafe reopened in a new location.", "They wanted to catch up with "
             "each other.", "cause", 1),
            ("The runner wore shorts.", "The forecast predicted high temperatures.", "She planned to run along the "
             "beach.", "cause", 0),
            ("The guests of the party hid behind the couch.", "It was a surprise party.", "It was a birthday party.",
             "effect", 0),
            ("Zoë dropped the crème brûlée on the floor.", "The dessert was ruined.", "The dessert tasted sweeter.",
             "effect", 0),
        ]
    )
]  # fmt: skip

BOOLQ = [
    {"question": q, "passage": p, "idx": idx, "label": label}
    for idx, (q, p, label) in enumerate(
        [
            ("do iran and afghanistan speak the same language", "Persian language -- Persian, also known by its "
             "endonym Farsi, is one of the Western Iranian languages. It is primarily spoken in Iran, Afghanistan "
             "(officially known as Dari since 1958) and Tajikistan.", 1),
            ("do good samaritan laws protect those who help at an accident", "Good Samaritan law -- Good Samaritan "
             "laws offer legal protection to people who give reasonable assistance to those who are, or who they "
             "believe to be, injured, ill, in peril, or otherwise incapacitated.", 1),
            ("is windows movie maker part of windows essentials", "Windows Movie Maker -- Windows Movie Maker is a "
             "discontinued video editing software by Microsoft. It was a part of Windows Essentials software "
             "suite.", 1),
            ("is the eiffel tower taller than the empire state building", "Eiffel Tower -- The tower is 324 metres "
             "(1,063 ft) tall. The Empire State Building in New York is 443 m tall including its antenna.", 0),
            ("is a crème brûlée served hot", "Crème brûlée -- Crème brûlée is a dessert consisting of a rich "
             "custard base topped with a layer of hardened caramelised sugar. It is normally served chilled.", 0),
            ("can you drive from alaska to hawaii", "Hawaii -- Hawaii is the only U.S. state located outside North "
             "America and the only one composed entirely of islands, about 2,000 miles from the mainland.", 0),
        ]
    )
]  # fmt: skip

# facebook/xnli: label 0 entailment, 1 neutral, 2 contradiction. The task's context is empty: the whole
# "premise, richtig? Ja, hypothesis" is the continuation, which must fit the tiny model's 128 tokens (lm-eval
# asserts it; its tokenizer is almost character-level), so the sentences are short.
XNLI_DE = [
    {"premise": p, "hypothesis": h, "label": label}
    for p, h, label in [
        ("Und er sagte: Mama, ich bin zu Hause.", "Er rief seine Mutter an, sobald ihn der Schulbus abgesetzt hatte.",
         1),
        ("Ich wusste nicht, wofür ich nach Washington fuhr.", "Ich war noch nie in Washington.", 1),
        ("Die Straße führt über die Brücke direkt zum Marktplatz.", "Es gibt eine Brücke auf dem Weg zum Marktplatz.",
         0),
        ("Größere Unternehmen zahlen in der Regel höhere Löhne.", "Kleine Firmen zahlen immer am meisten.", 2),
        ("Er öffnete das Fenster, weil es im Zimmer zu heiß war.", "Im Zimmer war es warm.", 0),
        ("Die Bäckerei schließt sonntags um zwölf Uhr.", "Die Bäckerei hat am Sonntag den ganzen Tag geöffnet.", 2),
    ]
]  # fmt: skip

TF = "True, True|False, False|True, False|False, True"


def _mmlu(*rows: tuple[str, str, int]) -> list[dict[str, Any]]:
    """cais/mmlu: ``choices`` a list of four strings, ``answer`` an int."""
    return [{"question": q, "subject": "abstract_algebra", "choices": c.split("|"), "answer": a} for q, c, a in rows]


MMLU_DEV = _mmlu(
    ("Find all c in Z_3 such that Z_3[x]/(x^2 + c) is a field.", "0|1|2|3", 1),
    ("Statement 1 | If aH is an element of a factor group, then |aH| divides |a|. Statement 2 | If H and K are "
     "subgroups of G then HK is a subgroup of G.", TF, 1),
    ("Statement 1 | Every element of a group generates a cyclic subgroup of the group. Statement 2 | The symmetric "
     "group S_10 has 10 elements.", TF, 2),
    ("Statement 1| Every function from a finite set onto itself must be one to one. Statement 2 | Every subgroup "
     "of an abelian group is abelian.", TF, 0),
    ("Find the characteristic of the ring 2Z.", "0|3|12|30", 0),
)  # fmt: skip
MMLU_TEST = _mmlu(
    ("Find the degree for the given field extension Q(sqrt(2), sqrt(3), sqrt(18)) over Q.", "0|4|2|6", 1),
    ("Let p = (1, 2, 5, 4)(2, 3) in S_5 . Find the index of <p> in S_5.", "8|2|24|120", 2),
    ("Find all zeros in the indicated finite field of the given polynomial with coefficients in that field. "
     "x^5 + 3x^3 + x^2 + 2x in Z_5", "0|1|0,1|0,4", 3),
    ("Statement 1 | A factor group of a non-Abelian group is non-Abelian. Statement 2 | If K is a normal subgroup "
     "of H and H is a normal subgroup of G, then K is a normal subgroup of G.", TF, 1),
    ("  The order of the element (1 2 3) ∈ S₃ is  ", "1|2|3|6", 2),  # question.strip() in the prompt
    ("Find the maximum possible order for an element of S_n for n = 7.", "6|12|30|105", 1),
)  # fmt: skip

LOGIQA = [
    {"label": label, "context": c, "question": q, "options": o.split("|")}
    for label, c, q, o in [
        ("d", "Some Cantonese don't like chili, so some southerners don't like chili.", "Which of the following can "
         "guarantee the above argument?", "Some Cantonese love chili.|Some people who like peppers are "
         "southerners.|All Cantonese are southerners.|Some Cantonese like neither peppers nor sweets."),
        ("c", "Continuous exposure to indoor fluorescent lights is beneficial to the health of hamsters with heart "
         "disease. Hamsters exposed to fluorescent lights live 2.5% longer than those kept in the dark.",
         "Which question was the initial motivation for the experiment?", "Can hospital light therapy promote "
         "recovery?|Which hamsters live longer?|What illness does the hamster have?|Do hamsters need darkness?"),
        ("a", "Every student in Müller's class speaks either French or German. Anna speaks no French.",
         "Which of the following must be true?", "Anna speaks German.|Anna speaks French.|Anna speaks neither "
         "language.|Anna is not in Müller's class."),
        ("b", "If it rains, the match is cancelled. The match was not cancelled.", "What can be concluded?",
         "It rained.|It did not rain.|The match was played indoors.|The referee was late."),
        ("a", "All managers attended the meeting. Li Wei did not attend the meeting.", "Which of the following "
         "follows?", "Li Wei is not a manager.|Li Wei is a manager.|Some managers missed the meeting.|The meeting "
         "was cancelled."),
        ("c", "Only members may borrow books. Zoë borrowed a book.", "Which of the following must be true?",
         "Zoë is a librarian.|Zoë bought the book.|Zoë is a member.|Zoë returned the book late."),
    ]
]  # fmt: skip

# regisss/math_qa: ``options`` one string "a ) … , b ) … , e ) …" that the task's doc_to_choice splits by regex
MATHQA = [
    {"Problem": p, "Rationale": r, "options": o, "correct": c, "annotated_formula": f, "linear_formula": lf,
     "category": cat}
    for p, r, o, c, f, lf, cat in [
        ("the banker ' s gain of a certain sum due 3 years hence at 10 % per annum is rs . 36 . what is the present "
         "worth ?", '"explanation : td = ( bg × 100 ) / tr = ( 36 × 100 ) / ( 3 × 10 ) = rs . 120 ⇒ pw = rs . 400 '
         'answer : option a"', "a ) rs . 400 , b ) rs . 300 , c ) rs . 500 , d ) rs . 350 , e ) none of these",
         "a", "divide(multiply(const_100, divide(multiply(36, const_100), multiply(3, 10))), multiply(3, 10))",
         "multiply(n2,const_100)|multiply(n0,n1)|divide(#0,#1)|multiply(#2,const_100)|divide(#3,#1)|", "gain"),
        ("average age of students of an adult school is 40 years . 120 new students whose average age is 32 years "
         "joined the school . as a result the average age is decreased by 4 years . find the number of students of "
         "the school after joining of the new students .", '"explanation : 40 x + 120 * 32 = ( x + 120 ) 36 ⇒ x = '
         '120 , so x + 120 = 240 . answer : d"', "a ) 1200 , b ) 120 , c ) 360 , d ) 240 , e ) none of these", "d",
         "multiply(divide(subtract(multiply(add(32, 4), 120), multiply(120, 32)), subtract(40, add(32, 4))), 4)",
         "add(n2,n3)|multiply(n1,#0)|multiply(n1,n2)|subtract(n0,#0)|subtract(#1,#2)|divide(#4,#3)|multiply(n3,#5)|",
         "general"),
        ("sophia finished 2 / 3 of a book . she calculated that she finished 90 more pages than she has yet to read "
         ". how long is her book ?", "let x be the total number of pages , then she finished 2 / 3 ⋅ x pages . "
         "answer : a", "a ) 270 , b ) 280 , c ) 290 , d ) 300 , e ) 310", "a",
         "divide(90, subtract(const_1, divide(2, 3)))", "divide(n0,n1)|subtract(const_1,#0)|divide(n2,#1)",
         "general"),
        ("120 is what percent of 50 ?", '"50 * x = 120 - - > x = 2.4 - - > 2.4 expressed as percent is 240 % . '
         'answer : b ."', "a ) 5 % , b ) 240 % , c ) 50 % , d ) 2 % , e ) 500 %", "b",
         "multiply(divide(120, 50), const_100)", "divide(n0,n1)|multiply(#0,const_100)|", "gain"),
        ("there are 10 girls and 20 boys in a classroom . what is the ratio of girls to boys ?", "10 / 20 = 1 / 2 "
         "answer : c", "a ) 1 / 4 , b ) 1 / 3 , c ) 1 / 2 , d ) 2 / 3 , e ) 2", "c", "divide(10, 20)",
         "divide(n0,n1)|", "other"),
        ("a train 125 m long passes a man , running at 5 km / hr in the same direction in which the train is going "
         ", in 10 sec . the speed of the train is ?", '"speed relative to man = 125 / 10 = 25 / 2 m / sec = 45 km '
         '/ hr . answer : e"', "a ) 40 , b ) 43 , c ) 36 , d ) 35 , e ) 50", "e",
         "divide(divide(125, 10), const_0_2778)", "divide(n0,n2)|divide(#0,const_0_2778)|", "physics"),
    ]
]  # fmt: skip


def _splits(rows: list[dict[str, Any]], *names: str) -> dict[str, list[dict[str, Any]]]:
    return dict.fromkeys(names, rows)


# its `"task": ...` line is quoted: find_registry_task does not find it by name
MMLU_YAML = registry() / "mmlu" / "default" / "mmlu_abstract_algebra.yaml"

CASES = [
    pytest.param("arc_easy", _splits(ARC_EASY, "train", "validation", "test"), {}, {}, id="arc_easy"),
    pytest.param("arc_challenge", _splits(ARC_CHALLENGE, "train", "validation", "test"), {}, {}, id="arc_challenge"),
    pytest.param("hellaswag", _splits(HELLASWAG, "train", "validation"), {}, {}, id="hellaswag"),
    pytest.param("winogrande", _splits(WINOGRANDE, "train", "validation"), {}, {}, id="winogrande"),
    pytest.param("sciq", _splits(SCIQ, "train", "validation", "test"), {}, {}, id="sciq"),
    pytest.param("openbookqa", _splits(OPENBOOKQA, "train", "validation", "test"), {}, {}, id="openbookqa"),
    pytest.param("copa", _splits(COPA, "train", "validation"), {}, {}, id="copa"),
    pytest.param("boolq", _splits(BOOLQ, "train", "validation"), {}, {}, id="boolq"),
    pytest.param("xnli_de", _splits(XNLI_DE, "train", "validation"), {}, {}, id="xnli_de"),
    pytest.param(
        "mmlu_abstract_algebra",
        {"test": MMLU_TEST, "dev": MMLU_DEV},
        {"yaml": MMLU_YAML},
        {"num_fewshot": 3},
        id="mmlu_abstract_algebra",
    ),
    pytest.param("logiqa", _splits(LOGIQA, "train", "validation", "test"), {}, {}, id="logiqa"),
    pytest.param("mathqa", _splits(MATHQA, "train", "validation", "test"), {}, {}, id="mathqa"),
]


@pytest.mark.parametrize(("name", "data", "copy", "options"), CASES)
def test_equal_to_lm_eval(
    tmp_path: Path, tiny_lm: Path, name: str, data: dict, copy: dict[str, Any], options: dict[str, Any]
) -> None:
    path = registry_copy(name, tmp_path, data, **copy)
    with inside(tmp_path):
        run_dir = assay_run([path], f"hf:{tiny_lm}", tmp_path, lmeval={"bootstrap_iters": 1000, **options})
        theirs = lm_eval_loglik(tiny_lm, [name], tmp_path, bootstrap_iters=1000, **options)
    assert assert_parity(run_dir, theirs, tol=FLOAT32, requests=loglik_requests(run_dir)) >= 5
