-- The demo's row-level security on the caller's identity (applied by `interlock dev`): the
-- shop source carries identities (identity_propagation = settings), so each agent reading
-- public.agent_notes sees only the notes addressed to it. Idempotent.
CREATE TABLE IF NOT EXISTS public.agent_notes (
    id         serial PRIMARY KEY,
    agent      text NOT NULL,
    note       text NOT NULL
);
INSERT INTO public.agent_notes (agent, note)
SELECT v.agent, v.note
  FROM (VALUES
          ('demo-agent', 'Customer 7 asked for a call back about their latest order.'),
          ('demo-agent', 'Products below 10 in stock need a reorder proposal.'),
          ('night-agent', 'Re-run the weekly order summary after the warehouse sync.'))
       AS v(agent, note)
 WHERE NOT EXISTS (SELECT 1 FROM public.agent_notes);
ALTER TABLE public.agent_notes ENABLE ROW LEVEL SECURITY;
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_policies
                    WHERE tablename = 'agent_notes' AND policyname = 'notes_for_the_caller') THEN
        CREATE POLICY notes_for_the_caller ON public.agent_notes FOR SELECT
            USING (agent = current_setting('interlock.identity', true));
    END IF;
END $$;
GRANT SELECT ON public.agent_notes TO shop_reader;
