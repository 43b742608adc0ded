--! Previous: sha1:f31c8b8fbc8f99ac17219d59ceaba9d334777f95
--! Hash: sha1:17c4920f20d95b2bd38d30462bf35545a3cbac15
--! Message: Search text at most 200 characters

-- A search is at most 200 characters: ILIKE costs the pattern's length times each value's, and
-- a 100,000-character search over the tax codes took seconds. Every list search goes through
-- like_pattern, so the limit lives here. (chr(92) is the backslash, the ILIKE escape.)
create or replace function app_private.like_pattern(search text) returns text
  language plpgsql immutable parallel safe as
$$
declare b constant text := chr(92);
begin
  if length(search) > 200 then perform app_private.fail('search must be at most 200 characters.'); end if;
  return '%' || replace(replace(replace(normalize(search, NFC), b, b || b), '%', b || '%'), '_', b || '_') || '%';
end $$;
