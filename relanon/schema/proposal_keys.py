"""Propose the keys of a schema from the data: primary keys, then foreign keys between the tables.

Keys the database declares come first (:class:`~relanon.schema.proposal_rules.DeclaredKeys`);
otherwise a unique, non-null column named like an id is the primary key, and a column named like
another table's key whose values are all among that table's keys a foreign key. A column whose
name matches no key is linked by its values (:mod:`relanon.schema.proposal_values`): all of them
among a parent's single-column key, with a guard against accidental matches. A column named after
a table whose namesake there is not its key (Lahman's ``teamID``: a team is a ``yearID`` and a
``teamID``) is never linked: a note says why and how to add a key.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pandas as pd

from relanon.common.errors import format_examples
from relanon.schema.model import ForeignKey
from relanon.schema.proposal_hierarchy import forest, propose_self_reference
from relanon.schema.proposal_rules import (
    ID_WORDS,
    WEAK_KEY_WORDS,
    DeclaredKeys,
    Note,
    id_like,
    key_names_for,
    name_words,
    singular,
    snake_name,
)
from relanon.schema.proposal_values import (
    NEAR_COVERAGE,
    Containment,
    DistinctValues,
    containment,
    member,
    near_miss_message,
    orphan_rows,
)

PAIR_SEARCH_ROWS = 50_000
"""Tables with more rows are not searched for a key of two columns (a note's detail, not worth the time)."""
PAIR_SEARCH_LIMIT = 60
"""At most this many pairs of columns are tried."""

# --------------------------------------------------------------------------- primary keys


def declared_primary_key(table: str, frame: pd.DataFrame, declared: DeclaredKeys, notes: list[Note]) -> str | None:
    columns = tuple(declared.primary_keys.get(table, ()))
    if len(columns) == 1 and columns[0] in frame.columns:
        notes.append(Note(table, columns[0], "declared as the primary key in the database", about="primary_key"))
        return columns[0]
    if columns:
        notes.append(Note(table, None, f"the database declares a primary key of several columns "
                          f"({', '.join(columns)}); relanon needs a single-column key: see below", about="primary_key",
                          review=True))
    return None


def propose_primary_key(table: str, frame: pd.DataFrame, tables, notes: list[Note],
                        distinct_of: DistinctValues | None = None) -> str:
    own = key_names_for(table)
    others = set().union(*(key_names_for(t) for t in tables if t != table))
    ranked = []
    for position, column in enumerate(frame.columns):
        snake = snake_name(column)
        if not _can_be_key(frame[column]):
            continue
        pointing = _referenced_by(table, column, frame[column], tables)
        if pointing:
            rank, why = -1, f"the values of {pointing} are among its values (a link to it)"
        elif snake in own or snake in ID_WORDS:
            rank, why = 0, "named after the table" if snake in own else "named like an id"
        elif id_like(snake) and snake not in others:
            rank, why = 1, "named like an id"
        elif id_like(snake):
            rank, why = 2, "named like the key of another table (a one-to-one extension?)"
        elif name_words(snake) & set(WEAK_KEY_WORDS):
            rank, why = 3, "named like a code or a number"
        elif pd.api.types.is_integer_dtype(frame[column].dtype):
            rank, why = 4, "whole numbers, though not named like an id"
        else:
            rank, why = 5, "text, though not named like an id"
        ranked.append((rank, position, column, why))
    if ranked and min(ranked)[0] >= 3:  # no column named like an id: do other tables' values point to one?
        distinct_of = distinct_of or DistinctValues(tables)
        ranked = [_pointed_to_by_values(table, entry, tables, distinct_of) for entry in ranked]
    if not ranked:
        entity = singular(snake_name(table)) or "row"
        names = (f"{entity}_id", f"{entity}_key", "row_id", "relanon_row_id")
        taken = {snake_name(c) for c in frame.columns}  # Lahman's Teams has teamID: team_id would read as it
        missing = next(n for n in names if snake_name(n) not in taken)
        pair = unique_pair(frame)
        several = (f"; its rows are unique on ({', '.join(pair)}) together (a key of several columns? relanon "
                   "cannot use one)" if pair else "")
        notes.append(
            Note(
                table,
                missing,
                f"no unique, never-missing column named like an id{several}: add a column {missing!r} numbering "
                "the rows (1, 2, 3...) to the data, or name the real key here",
                about="primary_key",
                review=True,
            )
        )
        return missing
    rank, _, column, why = min(ranked)
    # unnamed unique columns are only a fallback: in a small table every column may be unique
    others_found = [c for r, _, c, _ in sorted(ranked)[1:] if r <= 3]
    message = f"unique and never missing, {why}"
    if others_found:
        message += f"; other candidates: {', '.join(others_found)}"
    notes.append(Note(table, column, message, about="primary_key", review=rank >= 2 or bool(others_found)))
    return column


def _pointed_to_by_values(table: str, entry: tuple, tables, distinct_of: DistinctValues) -> tuple:
    """``entry`` ranked 2 when a column of another table repeats values that are all among its values, and would
    be linked to it by values (:func:`_value_parent`): airports' ``faa`` rather than a unique altitude."""
    rank, position, column, why = entry
    mine = distinct_of(table, column)
    if mine is None:
        return entry
    found = []
    for other, frame in tables.items():
        if other == table:
            continue
        for name in frame.columns:
            theirs = distinct_of(other, name)
            if theirs is None or len(theirs.values) == theirs.rows or len(theirs.values) > len(mine.values):
                continue  # a child repeats its parents' keys
            match = containment(name, theirs, table, column, mine)
            if match is not None and match.plausible and match.orphans.empty:
                found.append(f"{other}.{name}")
    if not found:
        return entry
    return 2, position, column, f"all the values of {', '.join(found)} are among its values (a link to it?)"


def _referenced_by(table: str, column: str, values: pd.Series, tables) -> str:
    """The columns of other tables, as ``table.column``, that bear this column's name (not a generic one such as
    ``id``), repeat some value and hold only values of it: children pointing to it (the batting records'
    ``playerID`` in a table of people numbered by ``ID`` too). Empty when none does."""
    snake = snake_name(column)
    if snake in ID_WORDS:
        return ""
    found = []
    for other, frame in tables.items():
        if other == table:
            continue
        for name in frame.columns:
            if snake_name(name) != snake:
                continue
            present = frame[name].dropna()
            if not present.empty and not present.is_unique and _orphans(present, values).empty:
                found.append(f"{other}.{name}")
    return ", ".join(found)


def unique_pair(frame: pd.DataFrame, among: str | None = None) -> tuple[str, str] | None:
    """The first two never-missing, non-fractional columns (one of them ``among`` when given) whose values
    together are unique on every row; None when none is found among the first pairs tried."""
    if len(frame) > PAIR_SEARCH_ROWS or len(frame) < 2:
        return None
    usable = [c for c in frame.columns
              if not pd.api.types.is_float_dtype(frame[c].dtype) and bool(frame[c].notna().all())]
    pairs = [(a, b) for i, a in enumerate(usable) for b in usable[i + 1:] if among is None or among in (a, b)]
    for pair in pairs[:PAIR_SEARCH_LIMIT]:
        if frame[list(pair)].nunique().min() > 1 and not frame.duplicated(list(pair)).any():
            return pair
    return None


def _can_be_key(values: pd.Series) -> bool:
    dtype = values.dtype
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_float_dtype(dtype):
        return False
    if not (pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_string_dtype(dtype)):
        return False
    return bool(values.notna().all() and values.is_unique)


# --------------------------------------------------------------------------- foreign keys


def propose_foreign_keys(tables, keys: dict[str, str], notes: list[Note], declared: DeclaredKeys,
                         distinct_of: DistinctValues | None = None
                         ) -> tuple[dict[str, list[ForeignKey]], set[tuple[str, str]]]:
    """Declared links first, then links whose names match and whose values are included, then links
    by values alone, strongest first, skipping any that would close a cycle (relanon needs parents
    before children).

    Returns the links of each table, and the ``(table, column)`` left out though named like a key
    (orphan values, a cycle): they are dropped until the user declares them.
    """
    start = len(notes)
    found = _declared_links(tables, keys, notes, declared)
    held_back = {(n.table, n.column) for n in notes[start:] if n.column is not None}  # declared, left out
    taken = {(entry[3], entry[4]) for entry in found}
    unsure = any(declared.foreign_keys.values())  # guessing beside declared links: a person decides
    distinct_of = distinct_of or DistinctValues(tables)

    for child, frame in tables.items():
        for position, column in enumerate(frame.columns):
            if column == keys[child] or (child, column) in taken:
                continue
            within = propose_self_reference(child, column, frame, keys[child], notes)
            if within is not None:  # a hierarchy inside the table (a manager): no edge of the graph
                found.append((0, list(tables).index(child), position, child, column, child, within, unsure))
                continue
            match, named = _best_parent(child, column, frame[column], tables, keys, notes)
            if named and match is None:
                held_back.add((child, column))
            if not named:  # names come first: values only speak for a column no parent's key is named like
                match = _value_parent(child, column, tables, keys, notes, distinct_of)
                if match is None:
                    _namesake_not_key(child, column, tables, keys, notes, distinct_of)
            if match is not None:
                why = f"{match[2]}; not declared as a foreign key in the database" if unsure else match[2]
                review = unsure or match[0] >= VALUE_STRENGTH
                found.append((match[0], list(tables).index(child), position, child, column, match[1], why, review))
    graph = nx.DiGraph()
    graph.add_nodes_from(tables)
    links: dict[str, list[ForeignKey]] = {t: [] for t in tables}
    for strength, _, _, child, column, parent, why, review in sorted(found):
        if parent == child and not forest(tables[child], keys[child], column):
            notes.append(Note(child, column, f"{why}, but some rows form a cycle (a row its own ancestor): left out; "
                              "relanon releases a hierarchy without cycles: empty the reference of the row at the top "
                              "of each cycle, then declare it under foreign_keys", about="foreign_key", review=True))
            held_back.add((child, column))
            continue
        if parent != child and nx.has_path(graph, child, parent):
            notes.append(
                Note(
                    child,
                    column,
                    f"{why}, but this link would close a cycle of foreign keys ({parent} -> {child} -> ... -> "
                    f"{parent}); left out: declare it under foreign_keys and remove another link if it matters",
                    about="foreign_key",
                    review=True,
                )
            )
            if strength < VALUE_STRENGTH:  # named like a key: dropped until declared; values alone: kept
                held_back.add((child, column))
            continue
        if parent != child:
            graph.add_edge(parent, child)
        links[child].append(ForeignKey(column, parent, "linear_sum"))
        notes.append(Note(child, column, why, about="foreign_key", review=review))
    order = {t: {c: i for i, c in enumerate(tables[t].columns)} for t in tables}
    return {t: sorted(fks, key=lambda fk: order[t][fk.column]) for t, fks in links.items()}, held_back


def _declared_links(tables, keys: dict[str, str], notes: list[Note], declared: DeclaredKeys) -> list[tuple]:
    """The declared foreign keys relanon can use: one column, to the primary key of a table read."""
    found = []
    for child, links in declared.foreign_keys.items():
        if child not in tables:
            continue
        for columns, parent, parent_columns in links:
            columns, parent_columns = tuple(columns), tuple(parent_columns)
            where = f"{', '.join(columns)} -> {parent}({', '.join(parent_columns)})"
            if len(columns) != 1 or parent not in tables or columns[0] not in tables[child].columns:
                reason = "of several columns" if len(columns) != 1 else "to a table not read"
                notes.append(Note(child, columns[0] if len(columns) == 1 else None,
                                  f"the database declares a foreign key {where} {reason}: left out", "foreign_key",
                                  review=True))
            elif parent_columns != (keys[parent],):
                notes.append(Note(child, columns[0], f"the database declares a foreign key {where}, but relanon links "
                                  f"to the primary key of {parent} ({keys[parent]}): left out", "foreign_key",
                                  review=True))
            else:
                position = list(tables[child].columns).index(columns[0])
                found.append((-1, list(tables).index(child), position, child, columns[0], parent,
                              f"declared as a foreign key to {parent}.{keys[parent]} in the database", False))
    return found


def _best_parent(child, column, values: pd.Series, tables, keys, notes):
    """(strength, parent, why) of the parent this column refers to, or None; near misses noted. Second: whether
    the column is named like a parent's key at all."""
    snake = snake_name(column)
    candidates = []
    for parent, frame in tables.items():
        key = keys[parent]
        if parent == child or key not in frame.columns:
            continue
        key_snake = snake_name(key)
        if snake == key_snake and key_snake not in ID_WORDS:
            strength, named = 0, f"same name as {parent}.{key}"
        elif snake in key_names_for(parent):
            strength, named = 1, f"named after {parent}"
        elif key_snake not in ID_WORDS and snake.endswith("_" + key_snake):
            strength, named = 2, f"named like {parent}.{key} with a role prefix"
        else:
            continue
        candidates.append((strength, parent, named))
    matches = []
    present = values.dropna()
    for strength, parent, named in sorted(candidates):
        if present.empty:
            notes.append(
                Note(child, column, f"{named}, but every value is missing: not proposed as a link", "foreign_key", True)
            )
            continue
        orphans = _orphans(present, tables[parent][keys[parent]])
        if orphans.empty:
            matches.append((strength, parent, f"{named}; all {len(present):,} values found there"))
        else:
            notes.append(
                Note(
                    child,
                    column,
                    f"{named}, but {len(orphans):,} of {len(present):,} values are not keys of {parent} "
                    f"({orphans.nunique():,} of {present.nunique():,} distinct, e.g. "
                    f"{format_examples(orphans.unique()[:5])}): not linked; fix or remove the orphans, "
                    "then declare it under foreign_keys",
                    about="foreign_key",
                    review=True,
                )
            )
    return (matches[0] if matches else None), bool(candidates)


VALUE_STRENGTH = 3
"""Links found by values rank after those found by names (strengths 0 to 2), and are marked for review."""


def _value_parent(child, column, tables, keys, notes, distinct_of):
    """(strength, parent, why) of the parent whose key holds all of this column's values, or None; a near miss
    (at least :data:`~relanon.schema.proposal_values.NEAR_COVERAGE` of them) is noted."""
    mine = distinct_of(child, column)
    if mine is None:
        return None
    matches: list[tuple[Containment, int]] = []
    for parent, frame in tables.items():
        key = keys[parent]
        if parent == child or key not in frame.columns:
            continue
        theirs = distinct_of(parent, key)
        # a key: unique and never missing (a declared key may be neither in the data)
        if theirs is None or not len(theirs.values) == theirs.rows == len(frame):
            continue
        if len(mine.values) * NEAR_COVERAGE > len(theirs.values):
            continue
        match = containment(column, mine, parent, key, theirs)
        if match is not None and match.plausible and match.share >= NEAR_COVERAGE:
            matches.append((match, len(theirs.values)))
    # the parent whose names relate, then the smallest key set: the most specific list of codes
    matches.sort(key=lambda m: (not m[0].orphans.empty, not m[0].named, -m[0].share, m[1]))
    if not matches:
        return None
    best = matches[0][0]
    if not best.orphans.empty:
        rows = orphan_rows(tables[child][column], best.orphans)
        notes.append(Note(child, column, near_miss_message(column, mine, best, rows), "foreign_key", review=True))
        return None
    others = [f"{m.parent}.{m.key}" for m, _ in matches[1:] if m.orphans.empty]
    why = (f"all {len(mine.values):,} distinct values are keys of {best.parent}.{best.key}"
           + (" and the names relate" if best.named else ", though the names differ: check that it refers to "
              f"{best.parent}")
           + (f"; also all keys of {', '.join(others)}" if others else ""))
    return VALUE_STRENGTH + (not best.named), best.parent, why


def _namesake_not_key(child, column, tables, keys, notes, distinct_of) -> None:
    """Note a column named after another table whose column of that name is not the table's key (repeated or
    missing values): relanon links only to a single-column key, so it is not linked."""
    snake = snake_name(column)
    if snake in ID_WORDS:
        return
    for parent, frame in tables.items():
        if parent == child or snake not in key_names_for(parent):
            continue
        for name in frame.columns:
            if name == keys[parent] or snake_name(name) != snake:
                continue
            mine, theirs = distinct_of(child, column), distinct_of(parent, name)
            match = containment(column, mine, parent, name, theirs) if mine and theirs else None
            if match is None or match.share < NEAR_COVERAGE:
                continue
            problem = (f"{len(frame):,} rows, {len(theirs.values):,} distinct {name}" if theirs.rows == len(frame)
                       else f"{len(frame) - theirs.rows:,} of its {len(frame):,} rows have no {name}")
            pair = unique_pair(frame, among=name)
            several = f"; {parent} rows are unique on ({', '.join(pair)})" if pair else ""
            key = keys[parent] if keys[parent] in frame.columns else f"a column {keys[parent]!r} numbering its rows"
            notes.append(Note(
                child, column,
                f"named after {parent}, whose {name} is not its key ({problem}{several}): not linked, since relanon "
                f"links only to a single-column key, unique and never missing. To link {child} to {parent}, give "
                f"{parent} a key ({key}), add to {child} the key of each row's {parent} row, and declare that "
                f"column under foreign_keys; {column} stays a column of {child}",
                "foreign_key", review=True))
            return


def _orphans(values: pd.Series, keys: pd.Series) -> pd.Series:
    """Values not among ``keys``; numbers and text compared as text when their kinds differ. Compared once per
    distinct value: the rows holding an orphan are looked up only when there is one."""
    values, keys = _comparable(values), _comparable(keys)
    unique = pd.Series(pd.unique(values))
    compared = unique
    if pd.api.types.is_numeric_dtype(values.dtype) != pd.api.types.is_numeric_dtype(keys.dtype):
        compared, keys = unique.astype(str).str.strip(), keys.astype(str).str.strip()
    missing = unique[~member(compared, keys).to_numpy()]
    if missing.empty:
        return values.iloc[:0]
    return values[values.isin(missing)]


def _comparable(values: pd.Series) -> pd.Series:
    if pd.api.types.is_float_dtype(values.dtype):
        whole = values.dropna()
        if bool((whole == np.round(whole)).all()):
            return whole.astype("int64")
    return values


